// The one Catch2 main for stitchc's unit tests (compiled once).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
