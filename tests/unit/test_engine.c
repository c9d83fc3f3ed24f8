#include <criterion/criterion.h>
#include "engine.h"
Test(engine, smoke)
{
	struct engine *e;
	cr_assert_eq(engine_new(ENGINE_COUNTED, 1, 1, &e), 0);
	engine_free(e);
}
