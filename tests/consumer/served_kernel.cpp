// The masked kernel of masked_kernel.h served to `permcheck audit --exec` with <permcheck/serve.h>: its argument
// chooses the kernel, its padding-normalisation bug or the reference implementation.
#include "masked_kernel.h"

#include <permcheck/serve.h>

#include <iostream>
#include <string>

int main(int argc, char** argv) {
    const std::string which = argc > 1 ? argv[1] : "kernel";
    if (which == "kernel") return permcheck::serve(consumer::masked_kernel);
    if (which == "pads-in-the-denominator") return permcheck::serve(consumer::pads_in_the_denominator);
    if (which == "reference") return permcheck::serve(consumer::reference_attention);
    std::cerr << "served_kernel: kernel | pads-in-the-denominator | reference, got " << which << "\n";
    return 2;
}
