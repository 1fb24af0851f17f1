"""unittest's main for kbuild's Python tests: runs the module's tests as
unittest.main does (verbose, on stdout), then leaves the totals where
scripts/count-tests reads them: KBUILD_TEST_COUNTS_DIR/KBUILD_TEST_NAME.json,
{"passed": N, "failed": N} in test methods (set by tests/meson.build and
scripts/test; unset, nothing is written)."""
import json
import os
import sys
import unittest


def main():
    program = unittest.main(testRunner=unittest.TextTestRunner(stream=sys.stdout, verbosity=2),
                            exit=False)
    result = program.result
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    directory = os.environ.get("KBUILD_TEST_COUNTS_DIR")
    name = os.environ.get("KBUILD_TEST_NAME")
    if directory and name:
        passed = result.testsRun - failed - len(result.skipped)
        os.makedirs(directory, exist_ok=True)  # as the Catch2 runs do
        with open(os.path.join(directory, name + ".json"), "w") as f:
            json.dump({"passed": passed, "failed": failed}, f)
    sys.exit(0 if result.wasSuccessful() else 1)
