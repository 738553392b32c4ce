#include "check/blackbox.h"

#include "check/engine.h"
#include "check/lengths.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
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

void PrecisionEvidence::add(const Mat<double>& answer) {
    for (Eigen::Index i = 0; i < answer.rows(); ++i)
        for (Eigen::Index j = 0; j < answer.cols(); ++j) {
            const double v = answer(i, j);
            if (!std::isfinite(v)) continue;
            const bool in_range = std::abs(v) <= static_cast<double>(std::numeric_limits<float>::max());
            all_float32 = all_float32 && in_range && static_cast<double>(static_cast<float>(v)) == v;
            all_integer = all_integer && std::trunc(v) == v;
        }
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
        fail("a black box computes in float32 or float64; --dtype exact is for the reference layers");
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

enum class Kind { pass, violated, non_finite, nondeterministic };

// What one case showed. For nondeterminism, `input` was answered twice: lhs and rhs are the two answers.
struct Observation {
    Kind kind = Kind::pass;
    Mat<double> input, lhs, rhs;
    Permutation perm;
    Comparison comparison;
    std::string detail;
};

// The answers to one case: L(x), L(x) again when repeated (else empty), L(P x), and what they say of their
// precision. Asked once, judged with each tolerance an audit still considers.
struct Answers {
    Mat<double> y, again, lhs;
    PrecisionEvidence evidence;
};

ToleranceModel tolerance_of(Arithmetic dtype, double amplification) {
    ToleranceModel t;
    t.unit_roundoff = dtype == Arithmetic::float32 ? ScalarTraits<float>::unit_roundoff : ScalarTraits<double>::unit_roundoff;
    t.amplification = amplification;
    return t;
}

// Calls one black box, checks the shape of its answers and computes the tolerance of a comparison.
class Evaluator {
public:
    Evaluator(const BlackBox& box, const AuditOptions& o, Arithmetic dtype) : box_(box), o_(o) { set_dtype(dtype); }

    // The dtype of every comparison from now on (shrinking and reproducing, once the run has decided it).
    void set_dtype(Arithmetic dtype) { tolerance_ = tolerance_of(dtype, o_.amplification); }

    int evaluations = 0;
    std::string last_request;

    Mat<double> call(const Mat<double>& x) {
        last_request = request_text(x);
        ++evaluations;
        Mat<double> y = box_(x);
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

    // The answers to a case, classified with tolerance t.
    static Observation judge(const Case& c, const Answers& a, Output output, const ToleranceModel& t) {
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
        ob.rhs = output == Output::sequence ? c.perm.apply(a.y) : a.y;
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

    Observation observe(const Case& c, bool repeat) { return judge(c, ask(c, repeat), o_.output, tolerance_); }

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

    // Is `z` answered differently when asked twice?
    std::optional<Observation> twice(const Mat<double>& z) {
        const Mat<double> a = call(z);
        const Mat<double> b = call(z);
        return differ(z, a, b, "x", tolerance_);
    }

private:
    const BlackBox& box_;
    const AuditOptions& o_;
    ToleranceModel tolerance_;
    Eigen::Index width_ = -1;
};

// ------------------------------------------------------------------------------------------------ schedule

// The cases of this run: those of its shard, drawn exactly as search.h draws all of them, and which of them
// also evaluate L(x) twice.
struct Schedule {
    std::vector<int> index;  // each case's index in the whole audit
    std::vector<Case> cases;
    std::set<std::size_t> repeated;  // positions in `cases`

    bool repeats(std::size_t j) const { return repeated.count(j) > 0; }
};

// Case i of the audit, of the length the plan gives it. A permutation that moves nothing cannot show a
// violation, so one that came out as the identity swaps the first two positions instead.
Case scheduled_case(const AuditOptions& o, int n, const rc::Random& random, int size) {
    Case c = case_generator(CaseSpace{n, n, o.d, false})(random, size).value();
    if (n >= 2 && c.perm.moved() == 0) c.perm = Permutation::transposition(n, 0, 1);
    return c;
}

Schedule schedule_of(const AuditOptions& o) {
    Schedule s;
    const std::vector<int> lengths = audit_lengths({o.min_len, o.max_len, o.long_len, o.cases});
    rc::Random random(o.seed);
    for (int i = 0; i < o.cases; ++i) {
        const rc::Random case_random = random.split();
        if (!in_shard(i, o.shard)) continue;
        s.index.push_back(i);
        s.cases.push_back(scheduled_case(o, lengths[static_cast<std::size_t>(i)], case_random, size_for_case(i, o.cases)));
    }
    // Spread over the run, since the first cases are the smallest (RapidCheck's size grows with the case
    // index) and a zero input hides dropout.
    const std::size_t count = s.cases.size();
    for (int k = 0; k < o.repeat_checks && count > 0; ++k)
        s.repeated.insert(std::min(count - 1, static_cast<std::size_t>(k + 1) * count /
                                                  static_cast<std::size_t>(o.repeat_checks + 1)));
    return s;
}

// ----------------------------------------------------------------------------------------------------- run

// The first failure of the run: an observation, or an error of the black box.
struct Failure {
    std::size_t position = 0;  // in the schedule
    Observation observation;
    bool threw = false;
    std::string error, last_request;
};

// The tolerances a run judges each case with: the given dtype's, or, when it is inferred, float32's (the
// looser, first) and float64's.
std::vector<Arithmetic> lanes_of(const AuditOptions& o) {
    if (o.dtype) return {*o.dtype};
    return {Arithmetic::float32, Arithmetic::float64};
}

// What the run found: the first failure under the dtype it judged with; whether a stop request ended it.
struct RunOutcome {
    std::optional<Failure> failure;
    Arithmetic dtype = Arithmetic::float64;
    bool interrupted = false;
    int cases_done = 0;
};

// The stop of an audit asked for between calls (AuditOptions::stop_requested). Not a std::exception, so that
// no handler of a black box's failures mistakes it for one.
struct Interrupted {
    std::optional<Observation> smallest;  // interrupted while shrinking: the smallest failing case so far
};

bool stop_requested(const AuditOptions& o) { return o.stop_requested && o.stop_requested(); }

// Workers take cases in order and judge each with every lane's tolerance; once a case fails under the first
// (loosest) lane, which makes it fail under every lane, no later case is started. Per lane the failure with
// the lowest position wins, and the dtype is inferred from the answers of the cases up to the first lane's
// failure, so the outcome does not depend on the number of workers. A stop request ends every worker before
// its next case.
class CaseRun {
public:
    CaseRun(const Schedule& schedule, const AuditOptions& o)
        : schedule_(schedule), o_(o), evidence_(schedule.cases.size()) {
        for (Arithmetic a : lanes_of(o)) lanes_.push_back({a, tolerance_of(a, o.amplification), std::nullopt});
    }

    void work(Evaluator& ev) {
        for (;;) {
            if (stop_requested(o_)) {
                interrupted_ = true;
                return;
            }
            const std::size_t j = next_.fetch_add(1);
            if (j >= schedule_.cases.size() || j > stop_.load()) return;
            if (attempt(ev, j)) return;
        }
    }

    RunOutcome outcome() && {
        RunOutcome out;
        out.dtype = lanes_[0].dtype;
        if (!o_.dtype) {
            PrecisionEvidence all;
            const std::size_t last = std::min(stop_.load(), schedule_.cases.size() - 1);
            for (std::size_t j = 0; j <= last && !schedule_.cases.empty(); ++j) all.add(evidence_[j]);
            out.dtype = all.dtype();
        }
        for (Lane& lane : lanes_)
            if (lane.dtype == out.dtype) out.failure = std::move(lane.failure);
        out.interrupted = interrupted_.load();
        out.cases_done = done_;
        return out;
    }

private:
    static constexpr std::size_t none = std::numeric_limits<std::size_t>::max();

    struct Lane {
        Arithmetic dtype;
        ToleranceModel tolerance;
        std::optional<Failure> failure;
    };

    // Runs case j; true when it failed under the first lane (the run stops).
    bool attempt(Evaluator& ev, std::size_t j) {
        const int calls_before = ev.evaluations;
        std::vector<std::optional<Failure>> found(lanes_.size());
        try {
            const Answers answers = ev.ask(schedule_.cases[j], schedule_.repeats(j));
            evidence_[j] = answers.evidence;  // one writer per position; read after the workers are joined
            for (std::size_t k = 0; k < lanes_.size(); ++k) {
                Observation ob = Evaluator::judge(schedule_.cases[j], answers, o_.output, lanes_[k].tolerance);
                if (ob.kind != Kind::pass) found[k] = Failure{j, std::move(ob), false, "", ""};
            }
        } catch (const std::exception& e) {
            for (auto& f : found) f = Failure{j, Observation{}, true, e.what(), ev.last_request};
        }
        std::lock_guard<std::mutex> lock(mutex_);
        progress(ev.evaluations - calls_before);
        for (std::size_t k = 0; k < lanes_.size(); ++k)
            if (found[k] && (!lanes_[k].failure || j < lanes_[k].failure->position)) lanes_[k].failure = std::move(found[k]);
        if (!found[0]) return false;
        if (j < stop_.load()) stop_ = j;
        return true;
    }

    void progress(int calls) {  // under mutex_
        ++done_;
        calls_ += calls;
        if (o_.on_progress) o_.on_progress(AuditProgress{done_, static_cast<int>(schedule_.cases.size()), calls_, false});
    }

    const Schedule& schedule_;
    const AuditOptions& o_;
    std::vector<Lane> lanes_;
    std::vector<PrecisionEvidence> evidence_;
    std::atomic<std::size_t> next_{0}, stop_{none};
    std::atomic<bool> interrupted_{false};
    std::mutex mutex_;
    int done_ = 0, calls_ = 0;
};

RunOutcome run_cases(std::vector<Evaluator>& evaluators, const Schedule& schedule, const AuditOptions& o) {
    CaseRun run(schedule, o);
    const std::size_t workers = std::min(evaluators.size(), std::max<std::size_t>(schedule.cases.size(), 1));
    if (workers <= 1) {
        run.work(evaluators[0]);
    } else {
        std::vector<std::thread> threads;
        for (std::size_t k = 0; k < workers; ++k) threads.emplace_back(&CaseRun::work, &run, std::ref(evaluators[k]));
        for (std::thread& t : threads) t.join();
    }
    return std::move(run).outcome();
}

int total_evaluations(const std::vector<Evaluator>& evaluators) {
    int n = 0;
    for (const Evaluator& ev : evaluators) n += ev.evaluations;
    return n;
}

// -------------------------------------------------------------------------------------------------- shrink

// The predicate of a shrink: does the case still fail the same way? For nondeterminism, the case's input is
// asked twice and its permutation ignored. Remembers the observation of its last failing call, which is the
// minimum's, since search.h accepts every failing shrink.
struct SameFailure {
    Evaluator& ev;
    Kind kind;
    const AuditOptions& o;
    std::optional<Observation> last;

    bool operator()(const Case& c) {
        if (stop_requested(o)) throw Interrupted{};
        if (o.on_progress) o.on_progress(AuditProgress{0, 0, ev.evaluations, true});
        std::optional<Observation> ob = kind == Kind::nondeterministic ? ev.twice(c.x) : ev.observe(c, false);
        if (!ob || ob->kind != kind) return false;
        last = std::move(ob);
        return true;
    }
};

struct Shrunk {
    Case minimal;
    Observation observation;
    int steps = 0;
};

// Shrinks a failing case with the one case shrinker (check/case.h), keeping the kind of failure; nothing when
// the case, evaluated again, no longer fails that way.
std::optional<Shrunk> shrink_failure(Evaluator& ev, Kind kind, const Case& start, const AuditOptions& o) {
    SameFailure same{ev, kind, o, std::nullopt};
    const std::function<bool(const Case&)> fails = std::ref(same);
    if (!fails(start)) return std::nullopt;
    std::optional<ShrinkResult<Case>> r;
    try {
        r = shrink<Case>(shrinkable_case(start, o.min_len), fails, o.max_shrink_evaluations - 1);
    } catch (Interrupted& stop) {
        stop.smallest = same.last;  // search.h accepts every failing shrink: the last failing call's case is it
        throw;
    }
    return Shrunk{r->minimal.value(), *same.last, r->steps};
}

// Shrinks the first failure on one black box. found() is the latest finding, also when a call throws.
class FailureShrink {
public:
    FailureShrink(Evaluator& ev, const AuditOptions& o, Observation found) : ev_(ev), o_(o), found_(std::move(found)) {}

    void run(const Case& failing) {
        // Both sides again, before shrinking: the failing case is the largest and the likeliest to show
        // dropout-like nondeterminism, which a small shrunk case may hide.
        if (found_.kind == Kind::violated) reproduce(failing);
        if (found_.kind != Kind::nondeterministic) shrink_case(failing);
        if (found_.kind == Kind::nondeterministic) shrink_input();
    }

    const Observation& found() const { return found_; }
    int steps() const { return steps_; }

private:
    void reproduce(const Case& c) {
        if (auto nd = ev_.reproduce(c, found_)) found_ = *nd;
    }

    void shrink_case(const Case& failing) {
        const std::optional<Shrunk> shrunk = shrink_failure(ev_, found_.kind, failing, o_);
        if (!shrunk) {
            reproduce(failing);  // the failing case, evaluated again, no longer failed: its answers changed
            return;
        }
        steps_ += shrunk->steps;
        found_ = shrunk->observation;
        if (found_.kind == Kind::violated) reproduce(shrunk->minimal);
    }

    // The input answered twice differently (x, or P x of the failing case), as a case whose permutation the
    // predicate ignores.
    void shrink_input() {
        const Case input{found_.input, Permutation::identity(static_cast<int>(found_.input.rows()))};
        if (const std::optional<Shrunk> shrunk = shrink_failure(ev_, Kind::nondeterministic, input, o_)) {
            steps_ += shrunk->steps;
            found_ = shrunk->observation;
        }
    }

    Evaluator& ev_;
    const AuditOptions& o_;
    Observation found_;
    int steps_ = 0;
};

// --------------------------------------------------------------------------------------------------- verdict

Counterexample record(const Observation& ob, const AuditOptions& o, Property property) {
    Counterexample ce;
    ce.layer = o.name;
    ce.property = property;
    ce.dtype = o.dtype.value_or(Arithmetic::float64);
    ce.perm = ob.perm;
    ce.x = ob.input;
    ce.lhs = ob.lhs;
    ce.rhs = ob.rhs;
    ce.comparison = ob.comparison;
    ce.seed = o.seed;
    ce.black_box = true;
    return ce;
}

AuditResult labelled_result(const AuditOptions& o) {
    AuditResult result;
    result.property = o.output == Output::sequence ? Property::equivariance : Property::invariance;
    result.dtype = o.dtype.value_or(Arithmetic::float64);
    return result;
}

const char* finding_name(Kind k) {
    return k == Kind::violated ? "violation" : k == Kind::non_finite ? "non-finite output" : "nondeterministic answer";
}

Verdict verdict_of(Kind k) {
    return k == Kind::violated ? Verdict::violated : k == Kind::non_finite ? Verdict::non_finite : Verdict::nondeterministic;
}

std::string violation_detail(const Observation& found, const AuditOptions& o) {
    const Comparison& c = found.comparison;
    const SideNames names = side_names(o.output == Output::sequence ? Property::equivariance : Property::invariance);
    return std::string(names.lhs) + " and " + names.rhs + " differ by " +
           num(c.max_abs_diff) + " at " +
           (o.output == Output::sequence ? "position " + std::to_string(c.row) + ", " : std::string()) + "feature " +
           std::to_string(c.col) + " (tolerance " + num(c.tolerance) + ", n=" + std::to_string(found.input.rows()) +
           ", permutation " + found.perm.cycles() + "); both sides gave the same answers when evaluated again";
}

// Stopped while shrinking: the failure found is kept, shrunk as far as it got, and its kind named in the detail.
void judge_interrupted(AuditResult& result, const Observation& smallest, int case_index, const AuditOptions& o) {
    result.verdict = Verdict::interrupted;
    result.detail = std::string("interrupted while shrinking a ") + finding_name(smallest.kind) + " found at case " +
                    std::to_string(case_index) + "; the counterexample is the smallest found so far";
    result.counterexample = record(smallest, o, result.property);
    result.counterexample->case_index = case_index;
}

// The verdict on a failure of the run: shrunk on the first black box, or an error if shrinking failed.
void judge_failure(AuditResult& result, Evaluator& ev, const Schedule& schedule, const Failure& failure,
                   const AuditOptions& o) {
    const int case_index = schedule.index[failure.position];
    FailureShrink shrinking(ev, o, failure.observation);
    try {
        shrinking.run(schedule.cases[failure.position]);
    } catch (const Interrupted& stop) {
        judge_interrupted(result, stop.smallest ? *stop.smallest : shrinking.found(), case_index, o);
        result.counterexample->shrink_steps = shrinking.steps();
        return;
    } catch (const std::exception& e) {
        result.verdict = Verdict::error;
        result.error = std::string(e.what()) + " (while shrinking a " + finding_name(shrinking.found().kind) +
                       " found at case " + std::to_string(case_index) + ")";
        result.counterexample = record(shrinking.found(), o, result.property);
        result.counterexample->case_index = case_index;
        return;
    }
    const Observation& found = shrinking.found();
    result.verdict = verdict_of(found.kind);
    result.counterexample = record(found, o, result.property);
    result.counterexample->case_index = case_index;
    result.counterexample->shrink_steps = shrinking.steps();
    result.detail = found.kind == Kind::violated ? violation_detail(found, o) : found.detail;
}

// The lengths of the first `count` cases of the schedule, ascending, each once.
std::vector<int> lengths_covered(const Schedule& schedule, std::size_t count) {
    std::set<int> lengths;
    for (std::size_t j = 0; j < count && j < schedule.cases.size(); ++j)
        lengths.insert(static_cast<int>(schedule.cases[j].x.rows()));
    return {lengths.begin(), lengths.end()};
}

}  // namespace

std::string describe_finding(const AuditResult& r) {
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

AuditResult audit(const std::vector<BlackBox>& layers, const AuditOptions& given) {
    validate(given);
    if (layers.empty()) throw std::invalid_argument("an audit needs at least one black box");
    const Schedule schedule = schedule_of(given);
    std::vector<Evaluator> evaluators;
    for (const BlackBox& box : layers) evaluators.emplace_back(box, given, lanes_of(given)[0]);
    const RunOutcome run = run_cases(evaluators, schedule, given);
    // From here on every comparison uses the dtype the run judged with, as an audit given it would.
    AuditOptions o = given;
    o.dtype = run.dtype;
    for (Evaluator& ev : evaluators) ev.set_dtype(run.dtype);
    const std::optional<Failure>& failure = run.failure;

    AuditResult result = labelled_result(o);
    result.dtype_inferred = !given.dtype.has_value();
    result.cases = failure ? static_cast<int>(failure->position) + 1 : static_cast<int>(schedule.cases.size());
    if (!failure && run.interrupted) {
        result.verdict = Verdict::interrupted;
        result.cases = run.cases_done;
        result.detail = "interrupted after " + std::to_string(run.cases_done) + " of " +
                        std::to_string(schedule.cases.size()) + " cases, none of which failed";
    }
    result.lengths = lengths_covered(schedule, static_cast<std::size_t>(result.cases));
    if (!failure) {
        result.last_request = evaluators[0].last_request;
    } else if (failure->threw) {
        result.verdict = Verdict::error;
        result.error = failure->error;
        result.last_request = failure->last_request;
    } else {
        judge_failure(result, evaluators[0], schedule, *failure, o);
        result.last_request = evaluators[0].last_request;
    }
    result.evaluations = total_evaluations(evaluators);
    return result;
}

}  // namespace permcheck
