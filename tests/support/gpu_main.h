/*
 * The main() of a test binary whose tests need a GPU: Criterion's own, except that when every
 * test skipped and this machine has no GPU it exits JT_EXIT_NO_GPU, which ctest's
 * SKIP_RETURN_CODE (set for tests/test_gpu_*.c in CMakeLists.txt) reports as skipped instead
 * of passed. A binary with at least one test that ran keeps Criterion's status.
 */
#ifndef JIT_TEST_GPU_MAIN_H
#define JIT_TEST_GPU_MAIN_H

/* 77 is the automake convention for "skipped", which ctest users know. */
#define JT_EXIT_NO_GPU 77

int jt_gpu_test_main(int argc, char **argv);

/* Put once in a GPU test file. */
#define JT_GPU_TEST_MAIN()                                                                         \
    int main(int argc, char **argv) {                                                              \
        return jt_gpu_test_main(argc, argv);                                                       \
    }

#endif
