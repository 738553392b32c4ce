#include "check/blackbox.h"

#include "check/audit_engine.h"
#include "check/engine.h"
#include "check/lengths.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace permcheck {

namespace {
// Longer is possible, but a request of 1024 positions is already a long wait through a subprocess.
constexpr int kMaxAuditLen = 1024;
}  // namespace

Shard parse_shard(const std::string& text) {
    const auto bad = [&] {
        return std::invalid_argument("--shard must be K/N with 1 <= K <= N (e.g. 2/4 for the second of four runners), got '" +
                                     text + "'");
    };
    const auto slash = text.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == text.size()) throw bad();
    const auto number = [&](const std::string& s) {
        if (s.size() > 9 || !std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) throw bad();
        return std::stoi(s);
    };
    Shard s{number(text.substr(0, slash)), number(text.substr(slash + 1))};
    if (s.count < 1 || s.index < 1 || s.index > s.count) throw bad();
    return s;
}

bool in_shard(int case_index, const Shard& shard) { return case_index % shard.count == shard.index - 1; }

void engine::add_evidence(PrecisionEvidence& e, const double* values, std::size_t count) {
    for (std::size_t k = 0; k < count && (e.all_float32 || e.all_integer); ++k) {  // both false: nothing to learn
        const double v = values[k];
        if (!std::isfinite(v)) continue;
        const bool in_range = std::abs(v) <= static_cast<double>(std::numeric_limits<float>::max());
        e.all_float32 = e.all_float32 && in_range && static_cast<double>(static_cast<float>(v)) == v;
        e.all_integer = e.all_integer && std::trunc(v) == v;
    }
}

void PrecisionEvidence::add(const Mat<double>& answer) {
    engine::add_evidence(*this, answer.data(), static_cast<std::size_t>(answer.size()));
}

void PrecisionEvidence::add(const PrecisionEvidence& other) {
    all_float32 = all_float32 && other.all_float32;
    all_integer = all_integer && other.all_integer;
}

Arithmetic PrecisionEvidence::dtype() const {
    return all_float32 && !all_integer ? Arithmetic::float32 : Arithmetic::float64;
}

void validate(const AuditOptions& o) {
    const auto fail = [](const std::string& what) { throw std::invalid_argument(what); };
    if (o.d < 1) fail("the width --dim must be at least 1, got " + std::to_string(o.d));
    if (o.min_len < 1 || o.max_len < o.min_len)
        fail("sequence lengths must satisfy 1 <= --min-len <= --max-len, got " + std::to_string(o.min_len) + " and " +
             std::to_string(o.max_len));
    if (o.max_len > kMaxAuditLen) fail("--max-len must be at most " + std::to_string(kMaxAuditLen) + ", got " + std::to_string(o.max_len));
    if (o.long_len < 0 || o.long_len > kMaxAuditLen)
        fail("long_len must be between 0 and " + std::to_string(kMaxAuditLen) + ", got " + std::to_string(o.long_len));
    if (o.cases < 1) fail("--cases must be at least 1, got " + std::to_string(o.cases));
    if (o.shard.count < 1 || o.shard.index < 1 || o.shard.index > o.shard.count)
        fail("the shard must be K/N with 1 <= K <= N, got " + std::to_string(o.shard.index) + "/" +
             std::to_string(o.shard.count));
    if (o.dtype == Arithmetic::exact)
        fail("a black box computes in float32, float64, float16 or bfloat16; --dtype exact is for the reference layers");
    if (!(o.amplification >= 1.0) || !std::isfinite(o.amplification))
        fail("the amplification must be a finite number >= 1, got " + std::to_string(o.amplification));
    if (o.repeat_checks < 0) fail("repeat_checks must be >= 0, got " + std::to_string(o.repeat_checks));
    if (o.max_shrink_evaluations < 1)
        fail("max_shrink_evaluations must be >= 1, got " + std::to_string(o.max_shrink_evaluations));
}

namespace {

bool all_finite(const Mat<double>& m) { return m.allFinite(); }

double finite_max_abs(const Mat<double>& m) {
    double r = 0.0;
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index j = 0; j < m.cols(); ++j)
            if (std::isfinite(m(i, j))) r = std::max(r, std::abs(m(i, j)));
    return r;
}

std::string request_text(const Mat<double>& x) {
    return "n=" + std::to_string(x.rows()) + ", d=" + std::to_string(x.cols());
}

std::string num(double v) {
    std::ostringstream s;
    s.precision(3);
    s << v;
    return s.str();
}

using engine::Kind;
using engine::tolerance_of;

// What one case showed. For nondeterminism, `input` was answered twice: lhs and rhs are the two answers.
struct RowsObservation {
    Kind kind = Kind::pass;
    Mat<double> input, lhs, rhs;
    Permutation perm;
    Comparison comparison;
    std::string detail;
};

// The answers to one case: L(x), L(x) again when repeated (else empty), L(P x), and what they say of their
// precision. Asked once, judged with each tolerance an audit still considers.
struct RowsAnswers {
    Mat<double> y, again, lhs;
    PrecisionEvidence evidence;
};

// Calls one black box, checks the shape of its answers and computes the tolerance of a comparison: the evaluator
// of the one-tensor audit for the shared engine (check/audit_engine.h).
class Evaluator {
public:
    using Case = permcheck::Case;
    using Observation = RowsObservation;
    using Answers = RowsAnswers;

    Evaluator(const BatchedBlackBox& box, const AuditOptions& o, Arithmetic dtype) : box_(box), o_(o) { set_dtype(dtype); }

    // The dtype of every comparison from now on (shrinking and reproducing, once the run has decided it).
    void set_dtype(Arithmetic dtype) {
        dtype_ = dtype;
        tolerance_ = tolerance_of(dtype, o_.amplification);
    }

    int evaluations = 0;
    std::string last_request;

    Mat<double> call(const Mat<double>& x) {
        last_request = request_text(x);
        ++evaluations;
        return checked(x, box_.one(x));
    }

    // The answer y to the request x, its shape checked.
    Mat<double> checked(const Mat<double>& x, Mat<double> y) {
        const Eigen::Index want = o_.output == Output::sequence ? x.rows() : 1;
        if (y.rows() != want) {
            const std::string rows = std::to_string(y.rows()) + (y.rows() == 1 ? " row" : " rows");
            if (o_.output == Output::sequence)
                throw AdapterError("the layer answered " + rows + " for a request of n=" + std::to_string(x.rows()) +
                                   "; a sequence layer answers one row per position (a pooled layer: --output pooled)");
            throw AdapterError("the layer answered " + rows + " for a request of n=" + std::to_string(x.rows()) +
                               "; a pooled layer answers one vector");
        }
        if (y.cols() < 1) throw AdapterError("the layer answered rows of width 0 for a request of n=" + std::to_string(x.rows()));
        if (width_ < 0) width_ = y.cols();
        if (y.cols() != width_)
            throw AdapterError("the layer answered rows of width " + std::to_string(y.cols()) + " for a request of n=" +
                               std::to_string(x.rows()) + ", after rows of width " + std::to_string(width_) +
                               " before; the output width must not depend on the input");
        return y;
    }

    static Comparison compare_sides(const Mat<double>& x, const Mat<double>& a, const Mat<double>& b,
                                    const ToleranceModel& t) {
        const double magnitude = std::max({finite_max_abs(x), finite_max_abs(a), finite_max_abs(b)});
        return compare<double>(a, b, float_tolerance(t, x.rows(), x.cols(), magnitude));
    }

    // L(x) (twice when `repeat`) and L(P x).
    Answers ask(const Case& c, bool repeat) {
        Answers a;
        a.y = call(c.x);
        if (repeat) a.again = call(c.x);
        a.lhs = call(c.perm.apply(c.x));
        a.evidence.add(a.y);
        a.evidence.add(a.again);
        a.evidence.add(a.lhs);
        return a;
    }

    std::size_t block_size() const { return engine::block_size_of(box_.many); }

    // ask() for each case, every evaluation sent through the batched side, grouped by shape.
    std::vector<engine::Asked<Answers>> ask_block(const std::vector<Case>& cases, const std::vector<bool>& repeats) {
        std::vector<Mat<double>> inputs;
        std::vector<std::pair<Eigen::Index, Eigen::Index>> shapes;
        for (std::size_t k = 0; k < cases.size(); ++k) {
            inputs.push_back(cases[k].x);
            if (repeats[k]) inputs.push_back(cases[k].x);
            inputs.push_back(cases[k].perm.apply(cases[k].x));
        }
        for (const Mat<double>& x : inputs) shapes.emplace_back(x.rows(), x.cols());
        std::vector<BatchAnswer<Mat<double>>> got = engine::answer_grouped(inputs, shapes, engine::capacity_of(box_.many), box_.many);
        evaluations += static_cast<int>(inputs.size());
        std::vector<engine::Asked<Answers>> out(cases.size());
        std::size_t i = 0;
        for (std::size_t k = 0; k < cases.size(); ++k) {
            try {
                Answers a;
                a.y = take(inputs[i], got[i]);
                if (repeats[k]) a.again = take(inputs[i + 1], got[i + 1]);
                const std::size_t p = i + (repeats[k] ? 2 : 1);
                a.lhs = take(inputs[p], got[p]);
                for (const Mat<double>* m : {&a.y, &a.again, &a.lhs}) a.evidence.add(*m);
                out[k].answers = std::move(a);
            } catch (const std::exception& e) {
                out[k].error = e.what();
                out[k].request = last_request;
            }
            i += repeats[k] ? 3 : 2;
        }
        return out;
    }

    // One item of a batched call as call() would have returned it: its error thrown, its shape checked.
    Mat<double> take(const Mat<double>& x, BatchAnswer<Mat<double>>& item) {
        last_request = request_text(x);
        if (!item.value) throw AdapterError(item.error);
        return checked(x, std::move(*item.value));
    }

    // The answers to a case, classified with tolerance t.
    Observation judge(const Case& c, const Answers& a, const ToleranceModel& t) const {
        Observation ob;
        ob.perm = c.perm;
        ob.input = c.x;
        if (a.again.size() > 0)
            if (auto nd = differ(c.x, a.y, a.again, "L(x)", t)) return *nd;
        const Mat<double> px = c.perm.apply(c.x);
        ob.lhs = a.lhs;
        // P x == x (the identity, or ties): L(P x) answers the very request L(x) answered, so any difference
        // between the two answers is nondeterminism, whatever P L(x) is.
        if (px == c.x)
            if (auto nd = differ(c.x, a.y, ob.lhs, "x and as P x", t)) return *nd;
        ob.rhs = o_.output == Output::sequence ? c.perm.apply(a.y) : a.y;
        ob.comparison = compare_sides(c.x, ob.lhs, ob.rhs, t);
        if (!all_finite(a.y) || !all_finite(ob.lhs)) {
            ob.kind = Kind::non_finite;
            const bool first = !all_finite(a.y);
            const Mat<double>& bad = first ? a.y : ob.lhs;
            Eigen::Index r = 0, k = 0;
            for (Eigen::Index i = bad.rows() - 1; i >= 0; --i)
                for (Eigen::Index j = bad.cols() - 1; j >= 0; --j)
                    if (!std::isfinite(bad(i, j))) r = i, k = j;  // the first one, in row-major order
            ob.detail = std::string(first ? "L(x)" : "L(P x)") + " has a non-finite entry (" + num(bad(r, k)) +
                        ") at position " + std::to_string(r) + ", feature " + std::to_string(k) + " for n=" +
                        std::to_string(c.x.rows());
            return ob;
        }
        ob.kind = ob.comparison.holds ? Kind::pass : Kind::violated;
        return ob;
    }

    Observation observe(const Case& c, bool repeat) { return judge(c, ask(c, repeat), tolerance_); }

    // Evaluates the sides of a violation again: if either answer changed, the layer is nondeterministic.
    std::optional<Observation> reproduce(const Case& c, const Observation& seen) {
        const Mat<double> y = call(c.x);
        const Mat<double> py = call(c.perm.apply(c.x));
        if (auto nd = differ(c.perm.apply(c.x), seen.lhs, py, "L(P x)", tolerance_)) return nd;
        const Mat<double> rhs = o_.output == Output::sequence ? c.perm.apply(y) : y;
        if (auto nd = differ(c.x, seen.rhs, rhs, "L(x)", tolerance_)) {
            if (o_.output == Output::sequence) {
                // rhs is P L(x): report L(x) itself, the answer to the request x.
                nd->lhs = c.perm.inverse().apply(seen.rhs);
                nd->rhs = y;
                nd->comparison = compare_sides(c.x, nd->lhs, nd->rhs, tolerance_);
            }
            return nd;
        }
        return std::nullopt;
    }

    // Two answers to the same input z, compared with the tolerance of a comparison of that size.
    static std::optional<Observation> differ(const Mat<double>& z, const Mat<double>& a, const Mat<double>& b,
                                             const char* what, const ToleranceModel& t) {
        const Comparison cmp = compare_sides(z, a, b, t);
        if (cmp.holds) return std::nullopt;
        Observation ob;
        ob.kind = Kind::nondeterministic;
        ob.input = z;
        ob.perm = Permutation::identity(static_cast<int>(z.rows()));
        ob.lhs = a;
        ob.rhs = b;
        ob.comparison = cmp;
        ob.detail = std::string("the same input (n=") + std::to_string(z.rows()) + "), requested as " + what +
                    ", was answered twice with different results: they differ by " + num(cmp.max_abs_diff) +
                    " at position " + std::to_string(cmp.row) + ", feature " + std::to_string(cmp.col) +
                    " (tolerance " + num(cmp.tolerance) + ")";
        return ob;
    }

    // Is the case's input answered differently when asked twice?
    std::optional<Observation> twice(const Case& c) {
        const Mat<double> a = call(c.x);
        const Mat<double> b = call(c.x);
        return differ(c.x, a, b, "x", tolerance_);
    }

    Case input_case(const Observation& ob) const {
        return Case{ob.input, Permutation::identity(static_cast<int>(ob.input.rows()))};
    }
    rc::Shrinkable<Case> shrinkable(const Case& c) const { return shrinkable_case(c, o_.min_len); }
    void record(AuditResult& result, const Observation& ob, int case_index, int shrink_steps) const;
    std::string violation_detail(const Observation& found) const;

private:
    const BatchedBlackBox& box_;
    const AuditOptions& o_;
    Arithmetic dtype_ = Arithmetic::float64;
    ToleranceModel tolerance_;
    Eigen::Index width_ = -1;
};

// ------------------------------------------------------------------------------------------------ schedule

// Case i of the audit, of the length the plan gives it. A permutation that moves nothing cannot show a
// violation, so one that came out as the identity swaps the first two positions instead.
Case scheduled_case(const AuditOptions& o, int n, const rc::Random& random, int size) {
    Case c = case_generator(CaseSpace{n, n, o.d, false})(random, size).value();
    if (n >= 2 && c.perm.moved() == 0) c.perm = Permutation::transposition(n, 0, 1);
    return c;
}

// --------------------------------------------------------------------------------------------------- verdict

void Evaluator::record(AuditResult& result, const Observation& ob, int case_index, int shrink_steps) const {
    Counterexample ce;
    ce.layer = o_.name;
    ce.property = result.property;
    ce.dtype = dtype_;
    ce.perm = ob.perm;
    ce.x = ob.input;
    ce.lhs = ob.lhs;
    ce.rhs = ob.rhs;
    ce.comparison = ob.comparison;
    ce.seed = o_.seed;
    ce.black_box = true;
    ce.case_index = case_index;
    ce.shrink_steps = shrink_steps;
    result.counterexample = std::move(ce);
}

AuditResult labelled_result(const AuditOptions& o) {
    AuditResult result;
    result.property = o.output == Output::sequence ? Property::equivariance : Property::invariance;
    return result;
}

std::string Evaluator::violation_detail(const Observation& found) const {
    const AuditOptions& o = o_;
    const Comparison& c = found.comparison;
    const SideNames names = side_names(o.output == Output::sequence ? Property::equivariance : Property::invariance);
    return std::string(names.lhs) + " and " + names.rhs + " differ by " +
           num(c.max_abs_diff) + " at " +
           (o.output == Output::sequence ? "position " + std::to_string(c.row) + ", " : std::string()) + "feature " +
           std::to_string(c.col) + " (tolerance " + num(c.tolerance) + ", n=" + std::to_string(found.input.rows()) +
           ", permutation " + found.perm.cycles() + "); both sides gave the same answers when evaluated again";
}

}  // namespace

namespace {
// With the result's signature (every audit with one sets it); a result put together by hand without one shows
// the inputs in the order of their names, each as real.
std::string describe_signature_finding(const AuditResult& r) {
    const SignatureCounterexample& c = *r.signature_counterexample;
    Signature named;
    if (r.signature) named = *r.signature;
    else
        for (const auto& [name, t] : c.inputs) named.inputs.push_back(TensorSpec{name, {}, TensorKind::real, ""});
    std::string text = verdict_name(r.verdict);
    text += r.verdict == Verdict::nondeterministic ? " (first and second answer to one input, as the two sides)" : "";
    text += " (" + std::string(arithmetic_name(r.dtype)) + ")\n";
    return text + describe(c, named);
}
}  // namespace

std::string describe_finding(const AuditResult& r) {
    if (r.signature_counterexample) return describe_signature_finding(r);
    if (!r.counterexample) return "";
    const Counterexample& ce = *r.counterexample;
    if (r.verdict != Verdict::nondeterministic) {
        std::string text = describe(ce);
        const std::string violated = property_name(ce.property) + std::string(" violated by ");
        if (r.verdict == Verdict::non_finite && text.rfind(violated, 0) == 0)
            text.replace(0, violated.size(), "non-finite output from ");
        return text;
    }
    std::ostringstream s;
    s << "nondeterministic: " << ce.layer << " (" << arithmetic_name(ce.dtype) << ") answered one input twice, n = "
      << ce.n() << ", d = " << ce.d() << "\n  x =\n"
      << format_matrix(ce.x) << "  first answer =\n"
      << format_matrix(ce.lhs) << "  second answer =\n"
      << format_matrix(ce.rhs) << "  largest |difference| = " << ce.comparison.max_abs_diff << " at position "
      << ce.comparison.row << ", feature " << ce.comparison.col << " (tolerance " << ce.comparison.tolerance << ")\n";
    if (!ce.replay.empty()) s << "  replay: " << ce.replay << "\n";
    return s.str();
}

AuditResult audit(const BlackBox& layer, const AuditOptions& opts) { return audit(std::vector<BlackBox>{layer}, opts); }

AuditResult audit(const std::vector<BlackBox>& layers, const AuditOptions& opts) {
    std::vector<BatchedBlackBox> boxes;
    for (const BlackBox& box : layers) boxes.push_back(BatchedBlackBox{box, {}});
    return audit(boxes, opts);
}

AuditResult audit(const std::vector<BatchedBlackBox>& layers, const AuditOptions& given) {
    validate(given);
    if (layers.empty()) throw std::invalid_argument("an audit needs at least one black box");
    // The cases drawn exactly as search.h draws all of them, each of the length the plan gives it.
    const std::vector<int> lengths = audit_lengths({given.min_len, given.max_len, given.long_len, given.cases});
    const auto schedule = engine::Schedule<Case>::of(given, [&given, &lengths](int i, const rc::Random& random) {
        return scheduled_case(given, lengths[static_cast<std::size_t>(i)], random, size_for_case(i, given.cases));
    });
    std::vector<Evaluator> evaluators;
    for (const BatchedBlackBox& box : layers) evaluators.emplace_back(box, given, engine::lanes_of(given)[0]);
    return engine::run_audit(evaluators, schedule, given, labelled_result(given), [&](AuditResult& r, std::size_t count) {
        std::set<int> covered;  // the lengths of the first `count` cases, ascending, each once
        for (std::size_t j = 0; j < count && j < schedule.size(); ++j)
            covered.insert(lengths[static_cast<std::size_t>(schedule.index[j])]);
        r.lengths = {covered.begin(), covered.end()};
    });
}

}  // namespace permcheck