// Precompiled for every test executable (tests/meson.build): Catch2's single
// header and the standard headers nearly every test file reads. Parsing
// them was most of a test file's compile time (about 1.6 s of 1.8 s each).
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>
