// A shared library that is not a stitchc library: it exports no stitch_* symbol. stitch-run
// must refuse it by name rather than crash.
extern "C" __attribute__((visibility("default"))) int not_a_model_answer(void) { return 42; }
