/*
 * Device workspaces that the launches of one kernel may not share while they run (the wgmma
 * decode route's split-K partials and tile counters, the tcgen05 scheduler's counters and
 * tokens): one per stream, so that launches on different streams run at once and launches on one
 * stream are ordered by the stream itself. The first launch on a stream allocates its workspace
 * (cuMemAlloc, the leading `zero_bytes` zeroed and ordered before the launch) under the set's
 * lock; every later launch on that stream finds it in a lock-free table and takes no lock.
 *
 * The lock stays on two paths, each with its reason:
 * - a launch into a stream capture: allocating is not allowed while a stream is captured
 *   (CUDA's "potentially unsafe" calls in global capture mode), so captured launches use the
 *   set's capture workspace, made with the set. Launches into captures are ordered on it by an
 *   event, waited on only when the same capture recorded it (the driver refuses a dependency
 *   on work outside the capture); the lock keeps each wait, launch and record together. A
 *   graph's replays do not come through here: replays of two graphs that hold the same kernel
 *   share that workspace and must not run at the same time;
 * - a stream past the table's JIT_WS_STREAMS: it shares the capture workspace, ordered the
 *   same way.
 *
 * A stream is known by its handle, and for CU_STREAM_PER_THREAD (one handle, a stream per
 * thread) by its handle and the calling thread. A handle is not reused while the stream it named
 * has work pending (the driver frees a destroyed stream once its work is done), so two streams
 * that run at the same time never share a workspace.
 */
#ifndef JIT_STREAM_WORKSPACE_H
#define JIT_STREAM_WORKSPACE_H

#include <cuda.h>
#include <stddef.h>

#include "diag.h"
#include "driver.h"

/* Streams with a workspace of their own, per set (per loaded kernel). */
#define JIT_WS_STREAMS 64

typedef struct jit__ws_set jit__ws_set_t;

/* The launch a workspace is taken for: `ws` is the workspace's device address. */
typedef jit_status_t (*jit__ws_launch_fn)(const jit__driver_t *drv, CUdeviceptr ws, CUstream stream,
                                          void *arg, jit__diag_t *d);

/* A set of workspaces of `bytes` each, the first `zero_bytes` of which the kernel expects zero
 * before its first launch (and leaves zero after each). Allocates the capture workspace. */
jit_status_t jit__ws_set_create(const jit__driver_t *drv, size_t bytes, size_t zero_bytes,
                                jit__ws_set_t **out, jit__diag_t *d);
void jit__ws_set_destroy(const jit__driver_t *drv, jit__ws_set_t *set);

/* Run `fn` with the workspace of `stream` (see above for which one). */
jit_status_t jit__ws_launch(const jit__driver_t *drv, jit__ws_set_t *set, CUstream stream,
                            jit__ws_launch_fn fn, void *arg, jit__diag_t *d);

/* Streams that have a workspace of their own (tests, diagnostics). */
int jit__ws_set_streams(jit__ws_set_t *set);

#endif
