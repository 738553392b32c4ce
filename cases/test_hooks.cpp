// The test-only switch of cases/signature.h (test_only::plant_harness_bug): the harness bug a test plants, read
// where the harness plays it (cases/signature_moves.cpp, the properties' transformations). Never set outside tests.
#include "cases/signature.h"

#include <atomic>

namespace permcheck {

namespace {
std::atomic<test_only::HarnessBug> planted{test_only::HarnessBug::none};
}  // namespace

void test_only::plant_harness_bug(HarnessBug bug) { planted.store(bug); }
test_only::HarnessBug test_only::planted_harness_bug() { return planted.load(); }

}  // namespace permcheck
