// `permcheck demo`: "dog bites man" and "man bites dog" through embedding -> attention -> mean pooling. Without
// a position signal the model gets the very same vector for both sentences; a sinusoidal position signal or a
// recurrent layer tells them apart.
#include "cli/commands.h"

#include "layers/exact_pooling.h"
#include "layers/layers.h"

#include <bit>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace permcheck::cli {
namespace {

constexpr std::uint64_t kSeed = 1;  // the default seed of every check; not chosen for the outcome
constexpr Eigen::Index kWidth = 4;
const std::vector<std::string> kVocabulary = {"dog", "bites", "man"};
const std::vector<int> kDogBitesMan = {0, 1, 2}, kManBitesDog = {2, 1, 0};

enum class Model { attention, attention_sinusoidal, rnn };

// The model's rows before pooling, in scalar S; the weights are the same dyadic draws in every S.
template <class S> Mat<S> rows_of(Model model, const std::vector<int>& tokens) {
    Draw<S> draw = dyadic_draw<S>(kSeed);
    const Embedding<S> embed = Embedding<S>::random(static_cast<Eigen::Index>(kVocabulary.size()), kWidth, draw);
    const Mat<S> x = embed(tokens);
    if (model == Model::rnn) return ElmanRnn<S>::random(kWidth, kWidth, draw)(x);
    const Attention<S> attention = Attention<S>::random({kWidth, 1, false}, draw);
    if (model == Model::attention_sinusoidal) return attention(AbsolutePosition<S>::sinusoidal()(x));
    return attention(x);
}

bool same_bits(const Mat<float>& a, const Mat<float>& b) {
    for (Eigen::Index j = 0; j < a.cols(); ++j)
        if (std::bit_cast<std::uint32_t>(a(0, j)) != std::bit_cast<std::uint32_t>(b(0, j))) return false;
    return true;
}

bool same_exactly(const Mat<Rational>& a, const Mat<Rational>& b) {
    for (Eigen::Index j = 0; j < a.cols(); ++j)
        if (a(0, j) != b(0, j)) return false;
    return true;
}

// (rows of "man bites dog") = (rows of "dog bites man") reversed, bit for bit?
bool rows_are_permuted_bits(const Mat<float>& a, const Mat<float>& b) {
    for (Eigen::Index i = 0; i < a.rows(); ++i)
        for (Eigen::Index j = 0; j < a.cols(); ++j)
            if (std::bit_cast<std::uint32_t>(a(i, j)) != std::bit_cast<std::uint32_t>(b(a.rows() - 1 - i, j)))
                return false;
    return true;
}

void print_vector(const char* label, const Mat<double>& v) {
    std::printf("     %-14s [", label);
    for (Eigen::Index j = 0; j < v.cols(); ++j) std::printf("%s%12.9g", j ? " " : "", v(0, j));
    std::printf(" ]\n");
}

// One exact section: both pooled vectors, and whether they are the same rational numbers.
bool exact_section(int number, const char* title, Model model) {
    const Mat<Rational> a = pool(rows_of<Rational>(model, kDogBitesMan), Pool::mean);
    const Mat<Rational> b = pool(rows_of<Rational>(model, kManBitesDog), Pool::mean);
    std::printf("%d. %s (exact rational arithmetic; shown rounded)\n", number, title);
    print_vector("dog bites man", to_double(a));
    print_vector("man bites dog", to_double(b));
    return same_exactly(a, b);
}

int demo() {
    std::printf("permcheck demo: can the model tell who bit whom?\n\n"
                "  \"dog bites man\" = tokens [0 1 2], \"man bites dog\" = tokens [2 1 0] (vocabulary: dog bites man)\n"
                "  token embedding (width %ld) -> self-attention (one head) -> mean over positions; weights from "
                "seed %llu\n\n",
                static_cast<long>(kWidth), static_cast<unsigned long long>(kSeed));
    int surprises = 0;

    const bool plain_same = exact_section(1, "no position signal", Model::attention);
    std::printf("   -> %s\n\n", plain_same ? "IDENTICAL, every bit: attention only reorders its rows when the tokens "
                                              "are reordered, and the mean forgets the order."
                                            : "DIFFERENT: this contradicts the theory (attention is equivariant).");
    surprises += !plain_same;

    const Mat<float> rows_a = rows_of<float>(Model::attention, kDogBitesMan);
    const Mat<float> rows_b = rows_of<float>(Model::attention, kManBitesDog);
    // exact_pool: every row added exactly, the mean rounded once (layers/exact_pooling.h).
    const Mat<float> fa = exact_pool(rows_a, Pool::mean), fb = exact_pool(rows_b, Pool::mean);
    const Mat<float> plain_a = pool(rows_a, Pool::mean), plain_b = pool(rows_b, Pool::mean);
    std::printf("2. no position signal, float32; the mean summed exactly and rounded once (order-independent)\n");
    print_vector("dog bites man", fa.cast<double>());
    print_vector("man bites dog", fb.cast<double>());
    const bool rows_permuted = rows_are_permuted_bits(rows_a, rows_b);
    if (same_bits(fa, fb))
        std::printf("   -> IDENTICAL, every bit of float32%s.\n", rows_permuted
                        ? ": the attention rows are the same bits in reversed order, and the order-independent mean "
                          "cannot see the order"
                        : ", although the attention rows differ in their last bits");
    else
        std::printf("   -> differ in the last bits: float attention sums over keys in position order, so its rows%s "
                    "differ in rounding; an order-independent mean cannot undo that. Exactly (section 1) they are "
                    "equal.\n",
                    rows_permuted ? " do not" : "");
    std::printf("      (a plain float mean, summed in position order, gives %s bits)\n\n",
                same_bits(plain_a, plain_b) ? "the same" : "different");

    const bool signal_same =
        exact_section(3, "sinusoidal position signal added to the embeddings", Model::attention_sinusoidal);
    std::printf("   -> %s\n\n", signal_same ? "IDENTICAL: this contradicts the theory (the signal should break the "
                                               "symmetry)."
                                             : "DIFFERENT: the position signal tells the model where each token "
                                               "stands, so the sentences come apart.");
    surprises += signal_same;

    const bool rnn_same = exact_section(4, "Elman RNN instead of attention, no position signal", Model::rnn);
    std::printf("   -> %s\n", rnn_same ? "IDENTICAL: this contradicts the theory (an RNN reads in order)."
                                        : "DIFFERENT: the RNN reads the tokens in order, so its states, and even "
                                          "their mean, depend on the order.");
    return surprises == 0 ? 0 : 1;
}

}  // namespace

void add_demo(CLI::App& app, Outcome& outcome) {
    CLI::App* sub = app.add_subcommand("demo", "\"dog bites man\" vs \"man bites dog\": what attention can and cannot see");
    sub->footer("Exit status: 0 when the exact results match the theory (sections 1, 3 and 4), 1 otherwise.");
    sub->callback([&outcome] { outcome.exit_code = demo(); });
}

}  // namespace permcheck::cli
