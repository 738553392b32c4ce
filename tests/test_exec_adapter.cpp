// The subprocess adapter (adapters/exec_adapter.h) as a process: timeouts that kill its whole process group,
// crashes and early exits named with the last request, overlong lines, batch capacity learnt from the first
// answer's announcement, batched and stacked requests through a real pipe, and the audit engine fed by it.
// The adapters run are tests/adapters/fault.py's modes (tests/support/fault_adapter.h).
#include "adapters/exec_adapter.h"
#include "audit/audit_engine.h"
#include "audit/blackbox.h"
#include "audit/signature_audit.h"
#include "tests/support/fault_adapter.h"
#include "tests/support/stacked.h"
#include "tests/support/audit.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace permcheck {
namespace {

using test::seeded;

using test::kFault;
using test::stacked_item;
using test::stacked_signature;


// ---------------------------------------------------------------------------------------------------------
// The subprocess adapter

bool process_group_gone(pid_t pgid) {
    for (int t = 0; t < 200; ++t) {
        if (kill(-pgid, 0) != 0 && errno == ESRCH) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
}

TEST(ExecAdapter, HangIsKilledAtTheTimeoutWithItsWholeProcessGroupAndNoZombie) {
    adapters::ExecOptions eo;
    eo.command = kFault + " hang 1";
    eo.timeout_seconds = 1.5;
    adapters::ExecAdapter adapter(eo);
    const Mat<double> x = Mat<double>::Ones(2, 3);
    adapter(x);  // startup within the first request's timeout
    const auto t0 = std::chrono::steady_clock::now();
    try {
        adapter(x);
        ADD_FAILURE() << "a hanging adapter answered";
    } catch (const AdapterError& e) {
        EXPECT_NE(std::string(e.what()).find("did not answer within 1.5 s"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("last request: id 2, n=2;"), std::string::npos) << e.what();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(seconds, 1.5 + 2.0);
    EXPECT_TRUE(process_group_gone(adapter.pid())) << "the adapter and its child sleep must be killed";
    errno = 0;
    EXPECT_EQ(waitpid(adapter.pid(), nullptr, WNOHANG), -1) << "already reaped: no zombie";
    EXPECT_EQ(errno, ECHILD);
    EXPECT_THROW(adapter(x), AdapterError) << "a failed adapter stays failed";
}

TEST(ExecAdapter, CrashNamesTheStatusTheRequestCountAndTheLastRequest) {
    adapters::ExecOptions eo;
    eo.command = kFault + " crash 3";
    adapters::ExecAdapter adapter(eo);
    const Mat<double> x = Mat<double>::Ones(5, 2);
    for (int i = 0; i < 3; ++i) adapter(x);
    try {
        adapter(x);
        ADD_FAILURE() << "a crashed adapter answered";
    } catch (const AdapterError& e) {
        EXPECT_NE(std::string(e.what()).find("adapter exited with status 3 after 4 requests (3 answered); last request: "
                                             "id 4, n=5;"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_TRUE(process_group_gone(adapter.pid()));
}

TEST(ExecAdapter, OverlongLineIsRefusedWithoutReadingItWhole) {
    adapters::ExecOptions eo;
    eo.command = kFault + " long 5000000";
    eo.max_line_bytes = 4096;
    adapters::ExecAdapter adapter(eo);
    try {
        adapter(Mat<double>::Ones(1, 1));
        ADD_FAILURE() << "an overlong line was accepted";
    } catch (const AdapterError& e) {
        EXPECT_NE(std::string(e.what()).find("longer than 4096 bytes"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(process_group_gone(adapter.pid()));
}

TEST(ExecAdapter, ImmediateExitIsReportedNotASignal) {
    adapters::ExecOptions eo;
    eo.command = kFault + " exit";
    adapters::ExecAdapter adapter(eo);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    try {
        adapter(Mat<double>::Ones(3, 2));
        ADD_FAILURE();
    } catch (const AdapterError& e) {
        EXPECT_NE(std::string(e.what()).find("exited with status 0 after 1 request"), std::string::npos) << e.what();
    }
}

// ---------------------------------------------------------------------------------------------------------
// Batched and stacked requests through the process (docs/protocol.md, "Batched requests")

TEST(ExecAdapter, AStackedAdapterGetsEachBatchAsOneStackedRequest) {
    adapters::ExecOptions eo;
    eo.command = kFault + " stacked 8";
    adapters::ExecAdapter adapter(eo);
    const Signature s = stacked_signature("x:n,1,2", "y:n,1,2");
    adapter(s, stacked_item(2, 0));
    ASSERT_TRUE(adapter.stacked());
    auto answers = adapter(s, std::vector<Tensors>{stacked_item(2, 10), stacked_item(2, 20), stacked_item(2, 30)});
    ASSERT_EQ(answers.size(), 3u);
    for (std::size_t k = 0; k < 3; ++k) {
        ASSERT_TRUE(answers[k].value) << answers[k].error;
        std::vector<double> want = stacked_item(2, 10.0 * (k + 1)).at("x").values;
        for (double& v : want) v += 1000.0 * k;  // the adapter saw item k at position k of the batch dim
        EXPECT_EQ(answers[k].value->at("y").values, want) << k;
        EXPECT_EQ(answers[k].value->at("y").shape, (std::vector<int>{2, 1, 2}));
    }
    answers = adapter(s, std::vector<Tensors>{stacked_item(1, 99), stacked_item(1, 0)});
    ASSERT_EQ(answers.size(), 2u);
    EXPECT_NE(answers[1].error.find("adapter answered with an error: boom in item 1 (item 1 of 2 of request id 3"),
              std::string::npos)
        << answers[1].error;
    try {
        adapter(s, std::vector<Tensors>{stacked_item(1, 77), stacked_item(1, 0)});
        ADD_FAILURE() << "a short stacked output was accepted";
    } catch (const AdapterError& e) {
        EXPECT_NE(std::string(e.what()).find("adapter broke the protocol: output 'y' [1,2,2]: 32 base64 characters, "
                                             "expected 44"),
                  std::string::npos)
            << e.what();
    }
}

TEST(ExecAdapter, AnAnnouncedBatchIsLearntFromTheFirstAnswerAndItemErrorsStayItems) {
    adapters::ExecOptions eo;
    eo.command = kFault + " batched 16";
    eo.one_tensor = true;  // the one-tensor form's signature, spoken in its dialect
    adapters::ExecAdapter adapter(eo);
    EXPECT_EQ(adapter.batch_capacity(), 0) << "nothing is known before the first answer";
    adapter(Mat<double>::Ones(2, 2));
    EXPECT_EQ(adapter.batch_capacity(), 16);
    Mat<double> boom = Mat<double>::Ones(2, 2);
    boom(0, 0) = 99;
    const Signature s = one_tensor_signature(2, Output::sequence, 1, 8);
    const auto x = [](const Mat<double>& m) { return Tensors{{"x", tensor_matrix::as_tensor(m)}}; };
    const auto answers = adapter(s, std::vector<Tensors>{x(Mat<double>::Constant(2, 2, 3.0)), x(boom), x(Mat<double>::Ones(2, 2))});
    ASSERT_EQ(answers.size(), 3u);
    ASSERT_TRUE(answers[0].value && answers[2].value);
    EXPECT_EQ(tensor_matrix::as_matrix(answers[0].value->at("y")), Mat<double>::Constant(2, 2, 3.0));
    EXPECT_FALSE(answers[1].value);
    EXPECT_NE(answers[1].error.find("adapter answered with an error: boom at 99 (item 1 of 3 of request id 2, 3 items "
                                    "of n=2)"),
              std::string::npos)
        << answers[1].error;
    EXPECT_EQ(adapter(Mat<double>::Ones(1, 2)).rows(), 1) << "an item's error leaves the adapter running";
}

TEST(ExecAdapter, ABatchedAnswerWithTooFewItemsIsAProtocolError) {
    adapters::ExecOptions eo;
    eo.command = kFault + " batched-short 8";
    eo.one_tensor = true;  // the one-tensor form's signature, spoken in its dialect
    adapters::ExecAdapter adapter(eo);
    adapter(Mat<double>::Ones(2, 2));
    try {
        const Tensors x{{"x", tensor_matrix::as_tensor(Mat<double>::Ones(2, 2))}};
        adapter(one_tensor_signature(2, Output::sequence, 1, 8), std::vector<Tensors>(3, x));
        ADD_FAILURE() << "a short batch was accepted";
    } catch (const AdapterError& e) {
        EXPECT_NE(std::string(e.what()).find("adapter broke the protocol: the answer's \"batch\" holds 2 answers for a "
                                             "request of 3 items"),
                  std::string::npos)
            << e.what();
    }
}

// ---------------------------------------------------------------------------------------------------------
// The audit engine fed by the adapter's batched side

TEST(AuditBatched, AViolationOnlyTheBatchedAnswersShowIsFoundThroughTheAdapter) {
    adapters::ExecOptions eo;
    eo.command = kFault + " batched 32";
    eo.one_tensor = true;  // the one-tensor form's signature, spoken in its dialect
    int progress_calls = 0;
    AuditOptions o = seeded(200);
    o.on_progress = [&](const AuditProgress& p) { progress_calls += p.shrinking ? 0 : 1; };
    const Signature s = one_tensor_signature(o.d, o.output, o.min_len, o.max_len);  // what audit --dim runs
    const AuditResult r = audit(std::vector<BatchedNamedBlackBox>{adapters::exec_batched_named_black_box(eo, s)}, s, o);
    // The ordinary answers (the first request, the shrink) are y = x; the batched ones leak from position 4 at n >= 6:
    // the failure, asked alone, holds, so batching changed the answers.
    EXPECT_EQ(r.verdict, Verdict::batch_dependent) << describe_finding(r);
    EXPECT_EQ(r.confirmed_alone, 1);
    EXPECT_EQ(progress_calls, r.cases) << "progress once per case";
}

}  // namespace
}  // namespace permcheck
