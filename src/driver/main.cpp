// stitchc's entry point.
#include "driver/driver.h"

int main(int argc, char** argv) { return stitch::driver_main(argc, argv); }
