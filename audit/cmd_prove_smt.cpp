// Placeholder until the Z3 prover lands (issue 8): says so plainly, exit 2.
#include "commands.h"

namespace permcheck::cli {
int prove_smt(const SmtRequest&, std::ostream& out) {
    out << "permcheck: --smt is not available in this build yet\n";
    return 2;
}
}  // namespace permcheck::cli
