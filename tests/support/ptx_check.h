/*
 * PTX checks shared by the family tests.
 */
#ifndef JITGEMM_TEST_PTX_CHECK_H
#define JITGEMM_TEST_PTX_CHECK_H

/* The first line of `ptx` that declares a .global variable (".global ..." or
 * ".visible .global ...", ".extern .global ..."), or NULL. Kernel plan constants must never
 * become .global data: an .entry, a function or a ld.global is not one. */
const char *ptx_global_data_line(const char *ptx);

#endif
