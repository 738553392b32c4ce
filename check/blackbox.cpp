#include "check/blackbox.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

namespace permcheck {

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

void validate(const AuditOptions& o) {
    const auto fail = [](const std::string& what) { throw std::invalid_argument(what); };
    if (o.d < 1) fail("the width --dim must be at least 1, got " + std::to_string(o.d));
    if (o.min_len < 1 || o.max_len < o.min_len)
        fail("sequence lengths must satisfy 1 <= --min-len <= --max-len, got " + std::to_string(o.min_len) + " and " +
             std::to_string(o.max_len));
    if (o.max_len > 100) fail("--max-len must be at most 100, got " + std::to_string(o.max_len));
    if (o.cases < 1) fail("--cases must be at least 1, got " + std::to_string(o.cases));
    if (o.shard.count < 1 || o.shard.index < 1 || o.shard.index > o.shard.count)
        fail("the shard must be K/N with 1 <= K <= N, got " + std::to_string(o.shard.index) + "/" +
             std::to_string(o.shard.count));
    if (o.dtype == Arithmetic::exact)
        fail("a black box computes in float32 or float64; --dtype exact is for the reference layers");
    if (!(o.amplification >= 1.0) || !std::isfinite(o.amplification))
        fail("the amplification must be a finite number >= 1, got " + std::to_string(o.amplification));
    if (o.repeat_checks < 0) fail("repeat_checks must be >= 0, got " + std::to_string(o.repeat_checks));
    if (o.max_shrink_evaluations < 1)
        fail("max_shrink_evaluations must be >= 1, got " + std::to_string(o.max_shrink_evaluations));
}

namespace {

struct AuditCase {
    Mat<double> x;
    Permutation perm;
};

// n in [min_len, max_len] shrinking toward min_len; inputs with ties or generic values; permutations over
// all of S_n (full size, as in the engine) shrinking toward the identity.
rc::Gen<AuditCase> case_generator(const AuditOptions& o) {
    const int d = o.d;
    return rc::gen::mapcat(rc::gen::inRange(o.min_len, o.max_len + 1), [d](int n) {
        return rc::gen::map(rc::gen::pair(gen::sequence(n, d), rc::gen::resize(100, gen::permutation(n))),
                            [](const std::pair<Mat<double>, Permutation>& p) { return AuditCase{p.first, p.second}; });
    });
}

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

enum class Kind { pass, violated, non_finite, nondeterministic };

// What one case showed. For nondeterminism, `input` was answered twice: lhs and rhs are the two answers.
struct Observation {
    Kind kind = Kind::pass;
    Mat<double> input, lhs, rhs;
    Permutation perm;
    Comparison comparison;
    std::string detail;
};

// Calls one black box, checks the shape of its answers and computes the tolerance of a comparison.
class Evaluator {
public:
    Evaluator(const BlackBox& box, const AuditOptions& o) : box_(box), o_(o) {
        tolerance_.unit_roundoff =
            o.dtype == Arithmetic::float32 ? ScalarTraits<float>::unit_roundoff : ScalarTraits<double>::unit_roundoff;
        tolerance_.amplification = o.amplification;
    }

    int evaluations = 0;
    std::string last_request;

    Mat<double> call(const Mat<double>& x) {
        last_request = request_text(x);
        ++evaluations;
        Mat<double> y = box_(x);
        const Eigen::Index want = o_.output == Output::sequence ? x.rows() : 1;
        if (y.rows() != want) {
            if (o_.output == Output::sequence)
                throw AdapterError("the layer answered " + std::to_string(y.rows()) + " rows for a request of n=" +
                                   std::to_string(x.rows()) +
                                   "; a sequence layer answers one row per position (a pooled layer: --output pooled)");
            throw AdapterError("the layer answered " + std::to_string(y.rows()) + " rows for a request of n=" +
                               std::to_string(x.rows()) + "; a pooled layer answers one vector");
        }
        if (y.cols() < 1) throw AdapterError("the layer answered rows of width 0 for a request of n=" + std::to_string(x.rows()));
        if (width_ < 0) width_ = y.cols();
        if (y.cols() != width_)
            throw AdapterError("the layer answered rows of width " + std::to_string(y.cols()) + " for a request of n=" +
                               std::to_string(x.rows()) + ", after rows of width " + std::to_string(width_) +
                               " before; the output width must not depend on the input");
        return y;
    }

    Comparison compare_sides(const Mat<double>& x, const Mat<double>& a, const Mat<double>& b) const {
        const double magnitude = std::max({finite_max_abs(x), finite_max_abs(a), finite_max_abs(b)});
        return compare<double>(a, b, float_tolerance(tolerance_, x.rows(), x.cols(), magnitude));
    }

    // L(x) (twice when `repeat`), then L(P x), classified.
    Observation observe(const AuditCase& c, bool repeat) {
        Observation ob;
        ob.perm = c.perm;
        ob.input = c.x;
        const Mat<double> y = call(c.x);
        if (repeat) {
            const Mat<double> again = call(c.x);
            if (auto nd = differ(c.x, y, again, "L(x)")) return *nd;
        }
        const Mat<double> px = c.perm.apply(c.x);
        ob.lhs = call(px);
        // P x == x (the identity, or ties): L(P x) answers the very request L(x) answered, so any difference
        // between the two answers is nondeterminism, whatever P L(x) is.
        if (px == c.x)
            if (auto nd = differ(c.x, y, ob.lhs, "x and as P x")) return *nd;
        ob.rhs = o_.output == Output::sequence ? c.perm.apply(y) : y;
        ob.comparison = compare_sides(c.x, ob.lhs, ob.rhs);
        if (!all_finite(y) || !all_finite(ob.lhs)) {
            ob.kind = Kind::non_finite;
            const bool first = !all_finite(y);
            const Mat<double>& bad = first ? y : ob.lhs;
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

    // Evaluates the sides of a violation again: if either answer changed, the layer is nondeterministic.
    std::optional<Observation> reproduce(const AuditCase& c, const Observation& seen) {
        const Mat<double> y = call(c.x);
        const Mat<double> py = call(c.perm.apply(c.x));
        if (auto nd = differ(c.perm.apply(c.x), seen.lhs, py, "L(P x)")) return nd;
        const Mat<double> rhs = o_.output == Output::sequence ? c.perm.apply(y) : y;
        if (auto nd = differ(c.x, seen.rhs, rhs, "L(x)")) {
            if (o_.output == Output::sequence) {
                // rhs is P L(x): report L(x) itself, the answer to the request x.
                nd->lhs = c.perm.inverse().apply(seen.rhs);
                nd->rhs = y;
                nd->comparison = compare_sides(c.x, nd->lhs, nd->rhs);
            }
            return nd;
        }
        return std::nullopt;
    }

    // Two answers to the same input z, compared with the tolerance of a comparison of that size.
    std::optional<Observation> differ(const Mat<double>& z, const Mat<double>& a, const Mat<double>& b, const char* what) {
        const Comparison cmp = compare_sides(z, a, b);
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

    // Is `z` answered differently when asked twice?
    std::optional<Observation> twice(const Mat<double>& z) {
        const Mat<double> a = call(z);
        const Mat<double> b = call(z);
        return differ(z, a, b, "x");
    }

private:
    const BlackBox& box_;
    const AuditOptions& o_;
    ToleranceModel tolerance_;
    Eigen::Index width_ = -1;
};

// The first failure of the case phase: an observation, or an error of the black box.
struct Failure {
    Observation observation;
    std::string error, last_request;
};

// Shrinks a failure with properties/search.h: the predicate keeps the failure's kind, and remembers the
// observation of the last failing value, which search.h leaves as the minimum.
template <class T>
SearchResult<T> shrink(const rc::Shrinkable<T>& start, const std::function<bool(const T&)>& fails, int cap) {
    const rc::Gen<T> fixed([start](const rc::Random&, int) { return start; });
    SearchOptions so;
    so.cases = 1;
    so.max_shrink_evaluations = cap;
    return search<T>(fixed, fails, so);
}

// RapidCheck's shrinking of n regenerates the rest of the case, so it can stop above the smallest failing
// length. This pass removes one position at a time from the shrunk case, keeping everything else, for as long
// as the failure remains: a leak that starts at position 4 ends at n = 5, index-based tie-breaking at n = 2.
Mat<double> without_row(const Mat<double>& x, int k) {
    Mat<double> y(x.rows() - 1, x.cols());
    for (Eigen::Index i = 0, r = 0; i < x.rows(); ++i)
        if (i != k) y.row(r++) = x.row(i);
    return y;
}

// Removes input row k, and the output row it goes to, (P x)[i] = x[k]: P x loses exactly that row.
AuditCase without_position(const AuditCase& c, int k) {
    std::vector<int> q;
    for (int v : c.perm.one_line())
        if (v != k) q.push_back(v > k ? v - 1 : v);
    return AuditCase{without_row(c.x, k), Permutation(std::move(q))};
}

Mat<double> without_position(const Mat<double>& x, int k) { return without_row(x, k); }

Eigen::Index length_of(const AuditCase& c) { return c.x.rows(); }
Eigen::Index length_of(const Mat<double>& x) { return x.rows(); }

template <class T>
T delete_positions(T value, const std::function<bool(const T&)>& fails, int min_len, int budget, int& steps) {
    for (bool removed = true; removed && length_of(value) > min_len;) {
        removed = false;
        for (int k = static_cast<int>(length_of(value)) - 1; k >= 0 && budget > 0; --k, --budget) {
            T smaller = without_position(value, k);
            if (fails(smaller)) {
                value = std::move(smaller);
                ++steps;
                removed = true;
                break;
            }
        }
    }
    return value;
}

Counterexample record(const Observation& ob, const AuditOptions& o, Property property) {
    Counterexample ce;
    ce.layer = o.name;
    ce.property = property;
    ce.dtype = o.dtype;
    ce.perm = ob.perm;
    ce.x = ob.input;
    ce.lhs = ob.lhs;
    ce.rhs = ob.rhs;
    ce.comparison = ob.comparison;
    ce.seed = o.seed;
    ce.black_box = true;
    return ce;
}

}  // namespace

AuditResult audit(const BlackBox& layer, const AuditOptions& opts) { return audit(std::vector<BlackBox>{layer}, opts); }

AuditResult audit(const std::vector<BlackBox>& layers, const AuditOptions& o) {
    validate(o);
    if (layers.empty()) throw std::invalid_argument("an audit needs at least one black box");
    AuditResult result;
    result.property = o.output == Output::sequence ? Property::equivariance : Property::invariance;
    result.dtype = o.dtype;

    // The cases of this shard, generated exactly as search.h would generate all of them.
    const rc::Gen<AuditCase> generator = case_generator(o);
    std::vector<int> index;
    std::vector<rc::Shrinkable<AuditCase>> cases;
    std::vector<AuditCase> values;  // a Shrinkable recomputes its value on every call
    {
        rc::Random random(o.seed);
        for (int i = 0; i < o.cases; ++i) {
            rc::Shrinkable<AuditCase> s = generator(random.split(), size_for_case(i, o.cases));
            if (!in_shard(i, o.shard)) continue;
            index.push_back(i);
            values.push_back(s.value());
            cases.push_back(std::move(s));
        }
    }

    // The cases that also evaluate L(x) twice: spread over the run, since the first cases are the smallest
    // (RapidCheck's size grows with the case index) and a zero input hides dropout.
    std::set<std::size_t> repeated;
    for (int k = 0; k < o.repeat_checks; ++k)
        repeated.insert(std::min(cases.size() - 1, (k + 1) * cases.size() / static_cast<std::size_t>(o.repeat_checks + 1)));
    if (cases.empty()) repeated.clear();

    // Case phase: workers take cases in order; once a case fails, no later case is started, and the failure
    // with the lowest index wins, so the outcome does not depend on the number of workers.
    const std::size_t none = std::numeric_limits<std::size_t>::max();
    std::atomic<std::size_t> next{0}, first_failure{none};
    std::mutex mutex;
    Failure failure;
    std::vector<Evaluator> evaluators;
    for (const BlackBox& box : layers) evaluators.emplace_back(box, o);
    const auto work = [&](Evaluator& ev) {
        for (;;) {
            const std::size_t j = next.fetch_add(1);
            if (j >= cases.size() || j > first_failure.load()) return;
            Failure f;
            bool failed = false;
            try {
                f.observation = ev.observe(values[j], repeated.count(j) > 0);
                failed = f.observation.kind != Kind::pass;
            } catch (const std::exception& e) {
                f.error = e.what();
                f.last_request = ev.last_request;
                failed = true;
            }
            if (!failed) continue;
            std::lock_guard<std::mutex> lock(mutex);
            if (j < first_failure.load()) {
                first_failure = j;
                failure = std::move(f);
            }
            return;
        }
    };
    const std::size_t workers = std::min(layers.size(), std::max<std::size_t>(cases.size(), 1));
    if (workers <= 1) {
        work(evaluators[0]);
    } else {
        std::vector<std::thread> threads;
        for (std::size_t k = 0; k < workers; ++k) threads.emplace_back(work, std::ref(evaluators[k]));
        for (std::thread& t : threads) t.join();
    }
    const auto total_evaluations = [&] {
        int n = 0;
        for (const Evaluator& ev : evaluators) n += ev.evaluations;
        return n;
    };
    const std::size_t f = first_failure.load();
    result.cases = f == none ? static_cast<int>(cases.size()) : static_cast<int>(f) + 1;
    if (f == none) {
        result.evaluations = total_evaluations();
        result.last_request = evaluators[0].last_request;
        return result;
    }
    const int case_index = index[f];
    if (!failure.error.empty()) {
        result.verdict = Verdict::error;
        result.error = failure.error;
        result.last_request = failure.last_request;
        result.evaluations = total_evaluations();
        return result;
    }

    // Shrink phase, on the first black box.
    Evaluator& ev = evaluators[0];
    Observation found = failure.observation;
    SearchResult<AuditCase> shrunk_case;
    SearchResult<Mat<double>> shrunk_input;
    Observation last;
    bool have_last = false;
    try {
        if (found.kind != Kind::nondeterministic) {
            const Kind kind = found.kind;
            // Both sides again, before shrinking: the failing case is the largest and the likeliest to show
            // dropout-like nondeterminism, which a small shrunk case may hide.
            if (kind == Kind::violated)
                if (auto nd = ev.reproduce(values[f], found)) found = *nd;
        }
        if (found.kind != Kind::nondeterministic) {
            const Kind kind = found.kind;
            const std::function<bool(const AuditCase&)> fails = [&](const AuditCase& c) {
                Observation ob = ev.observe(c, false);
                if (ob.kind != kind) return false;
                last = std::move(ob);
                have_last = true;
                return true;
            };
            shrunk_case = shrink<AuditCase>(cases[f], fails, o.max_shrink_evaluations);
            if (!shrunk_case.minimal) {
                // The failing case, evaluated again, no longer failed: its answers changed.
                if (auto nd = ev.reproduce(values[f], found)) found = *nd;
            } else {
                int deleted = 0;
                const AuditCase minimal = delete_positions<AuditCase>(*shrunk_case.minimal, fails, o.min_len,
                                                                      o.max_shrink_evaluations, deleted);
                shrunk_case.shrink_steps += deleted;
                found = last;  // every failing call is accepted, so the last failing one is the minimum's
                if (kind == Kind::violated)
                    if (auto nd = ev.reproduce(minimal, found)) found = *nd;
            }
        }
        if (found.kind == Kind::nondeterministic) {
            // Shrink the input that was answered twice differently. It is x, or P x of the failing case.
            const Mat<double> z = found.input;
            const bool permuted = z.rows() == values[f].x.rows() && !(z == values[f].x);
            const rc::Shrinkable<Mat<double>> inputs = rc::shrinkable::map(
                cases[f], [permuted](const AuditCase& c) { return permuted ? c.perm.apply(c.x) : c.x; });
            const std::function<bool(const Mat<double>&)> fails = [&](const Mat<double>& x) {
                std::optional<Observation> nd = ev.twice(x);
                if (!nd) return false;
                last = std::move(*nd);
                have_last = true;
                return true;
            };
            have_last = false;
            const Observation before = found;
            shrunk_input = shrink<Mat<double>>(inputs, fails, o.max_shrink_evaluations);
            if (shrunk_input.minimal) {
                int deleted = 0;
                delete_positions<Mat<double>>(*shrunk_input.minimal, fails, o.min_len, o.max_shrink_evaluations, deleted);
                shrunk_input.shrink_steps += deleted;
            }
            found = shrunk_input.minimal && have_last ? last : before;
        }
    } catch (const std::exception& e) {
        result.verdict = Verdict::error;
        result.error = std::string(e.what()) + " (while shrinking a " +
                       (found.kind == Kind::violated       ? "violation"
                        : found.kind == Kind::non_finite ? "non-finite output"
                                                         : "nondeterministic answer") +
                       " found at case " + std::to_string(case_index) + ")";
        result.last_request = ev.last_request;
        result.evaluations = total_evaluations();
        result.counterexample = record(found, o, result.property);
        result.counterexample->case_index = case_index;
        return result;
    }

    result.verdict = found.kind == Kind::violated     ? Verdict::violated
                     : found.kind == Kind::non_finite ? Verdict::non_finite
                                                      : Verdict::nondeterministic;
    result.counterexample = record(found, o, result.property);
    result.counterexample->case_index = case_index;
    result.counterexample->shrink_steps = shrunk_case.shrink_steps + shrunk_input.shrink_steps;
    if (found.kind == Kind::violated) {
        const Comparison& c = found.comparison;
        result.detail = std::string(o.output == Output::sequence ? "L(P x) and P L(x)" : "L(P x) and L(x)") +
                        " differ by " + num(c.max_abs_diff) + " at " +
                        (o.output == Output::sequence ? "position " + std::to_string(c.row) + ", " : std::string()) +
                        "feature " + std::to_string(c.col) + " (tolerance " + num(c.tolerance) + ", n=" +
                        std::to_string(found.input.rows()) + ", permutation " + found.perm.cycles() +
                        "); both sides gave the same answers when evaluated again";
    } else {
        result.detail = found.detail;
    }
    result.last_request = ev.last_request;
    result.evaluations = total_evaluations();
    return result;
}

}  // namespace permcheck
