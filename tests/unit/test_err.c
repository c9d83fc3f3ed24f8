/*
 * test_err.c - the one error space: every code has words of its own, and
 * err_set() keeps the detail beside the code.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "cuterr.h"

Test(err, every_code_has_distinct_words)
{
	for (int a = E_INVAL; a < E_MAX; a++) {
		cr_assert_str_neq(err_str(a), "unknown error", "code %d", a);
		for (int b = E_INVAL; b < a; b++)
			cr_assert_str_neq(err_str(a), err_str(b),
			                  "codes %d and %d", a, b);
	}
	cr_assert_str_eq(err_str(0), "success");
	cr_assert_str_eq(err_str(E_NOENT), "no such snapshot");
	cr_assert_str_eq(err_str(E_MAX), "unknown error");
	cr_assert_str_eq(err_str(1), "unknown error");
	cr_assert_str_eq(err_str(-1), "unknown error");
}

Test(err, codes_do_not_overlap_errno_or_zero)
{
	/* Far from errno values and from the old per-module 1, 2, 3 ... */
	cr_assert_gt(E_INVAL, 255);
}

Test(err, set_keeps_detail)
{
	struct errinfo e;

	cr_assert_eq(err_set(&e, E_IO, "disk %s full at %d", "/var", 99),
	             E_IO);
	cr_assert_eq(e.code, E_IO);
	cr_assert_str_eq(e.text, "disk /var full at 99");
	cr_assert_eq(err_set(NULL, E_FULL, "ignored"), E_FULL);
	char big[400];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	err_set(&e, E_INVAL, "%s", big);
	cr_assert_eq(strlen(e.text), sizeof(e.text) - 1);
}
