"""Tests of python/permcheck_adapter.py: request lines of both forms fed to a served function and a served torch
module, each in a child process of its own, as permcheck runs it (its real stdin, stdout and stderr).

    python3 tests/python/test_permcheck_adapter.py PYTHON_DIR

PYTHON_DIR is the directory holding permcheck_adapter.py. Run with the python3 of
the project's Python environment (.venv/, torch 2.x); every test runs, the torch ones included: a Python without torch fails them.
"""
import base64
import json
import struct
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

ADAPTER_DIR = None  # set from argv in __main__

import torch  # noqa: F401  (the torch tests need it: without it this file fails, never skips)


def start(script):
    """The script (adapter code) running in a child, with the adapter's directory on its PYTHONPATH."""
    handle = tempfile.NamedTemporaryFile("w", suffix=".py", delete=False)
    handle.write(textwrap.dedent(script))
    handle.close()
    env = dict(os.environ, PYTHONPATH=ADAPTER_DIR)
    proc = subprocess.Popen([sys.executable, handle.name], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, text=True)
    proc.script_path = handle.name
    return proc


def finish(proc):
    """Waits for the child and closes what is left of its pipes; returns its exit code."""
    code = proc.wait(timeout=60)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        try:
            stream.close()
        except (BrokenPipeError, OSError):
            pass
    os.unlink(proc.script_path)
    return code


def run(script, requests, timeout=120):
    """Feeds the request lines (objects or strings) to the script; returns (answers, raw stdout, stderr, code)."""
    proc = start(script)
    lines = [r if isinstance(r, str) else json.dumps(r) for r in requests]
    try:
        out, err = proc.communicate("".join(line + "\n" for line in lines), timeout=timeout)
    finally:
        os.unlink(proc.script_path)
    answers = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return answers, out, err, proc.returncode


def placed(answer):
    """The answer with the raising place of each of its layer's errors ("where": FILE.py:LINE in FUNCTION, the
    innermost frame) checked and taken out: the script's file name is a temporary one."""
    if isinstance(answer, list):
        return [placed(item) for item in answer]
    if not isinstance(answer, dict):
        return answer
    out = {key: placed(value) for key, value in answer.items() if key != "where"}
    if answer.get("raised"):
        where = answer.get("where", "")
        assert re.fullmatch(r"[\w.-]+\.py:\d+ in \w+", where), "the raising place of %r" % (answer,)
    return out


FUNCTION_SCRIPT = """
    import sys
    from permcheck_adapter import serve

    def layer(x=None, q=None, mem=None, pad=None, edge_index=None, want=None):
        print("user output that must not reach stdout")
        if x is not None and q is None and pad is None and edge_index is None and want is None:
            if x and x[0] and x[0][0] == 99:
                raise ValueError("boom at 99")
            if x and x[0] and x[0][0] == 7:
                return [float("nan"), float("inf"), -float("inf")]
            return [[2 * v for v in row] for row in x]          # a sequence layer
        if want == [1]:
            return {"y": q, "g": [len(mem)], "extra": "ignored"}  # a dict by name
        if want == [2]:
            return (q, [len(mem)])                                 # a tuple in the request's order
        if pad is not None:
            types = sorted({type(v).__name__ for v in pad} | {type(v).__name__ for row in edge_index for v in row})
            return [float(i) for i, _ in enumerate(types)], 1.0 if "torch" in sys.modules else 0.0
        return [sum(col) for col in zip(*q)]                     # one value: the one output named

    serve(layer, batch=None)  # the unbatched protocol, exactly (BatchedFunction tests batching)
"""


class ServedFunction(unittest.TestCase):
    def test_one_tensor_form_sequence_and_pooled(self):
        answers, _, _, code = run(FUNCTION_SCRIPT, [
            {"id": 1, "x": [[0.5, -1], [2, 0.25]]},
            {"id": 2, "x": [[7.0]]},
        ])
        self.assertEqual(code, 0)
        self.assertEqual(answers[0], {"id": 1, "y": [[1.0, -2], [4, 0.5]]})
        self.assertEqual(answers[1]["id"], 2)
        pooled = answers[1]["y"]  # a flat list: a pooled layer's one vector
        self.assertTrue(math.isnan(pooled[0]) and pooled[1:] == [math.inf, -math.inf], pooled)

    def test_non_finite_values_are_written_as_python_json_writes_them(self):
        _, out, _, code = run(FUNCTION_SCRIPT, [{"id": 3, "x": [[7.0]]}])
        self.assertEqual(code, 0)
        self.assertEqual(out, '{"id": 3, "y": [NaN, Infinity, -Infinity]}\n')

    def test_named_form_keyword_arguments_single_tuple_and_dict_answers(self):
        q = [[0.5, 1.5], [2.0, -1.0]]
        mem = [[1.0, 2.0]]
        answers, _, _, code = run(FUNCTION_SCRIPT, [
            {"id": 10, "inputs": {"q": q, "mem": mem}, "shapes": {"q": [2, 2], "mem": [1, 2]}, "outputs": ["y"]},
            {"id": 11, "inputs": {"q": q, "mem": mem, "want": [1]}, "outputs": ["y", "g"]},
            {"id": 12, "inputs": {"q": q, "mem": mem, "want": [2]}, "outputs": ["y", "g"]},
        ])
        self.assertEqual(code, 0)
        self.assertEqual(answers[0], {"id": 10, "outputs": {"y": [2.5, 0.5]}})
        self.assertEqual(answers[1], {"id": 11, "outputs": {"y": q, "g": [1]}})
        self.assertEqual(answers[2], {"id": 12, "outputs": {"y": q, "g": [1]}})

    def test_masks_and_indices_reach_a_function_as_booleans_and_ints_without_importing_torch(self):
        answers, _, _, code = run(FUNCTION_SCRIPT, [
            {"id": 20, "inputs": {"pad": [True, False], "edge_index": [[0, 1], [1, 0]]},
             "shapes": {"pad": [2], "edge_index": [2, 2]}, "outputs": ["types", "torch"]},
        ])
        self.assertEqual(code, 0)
        self.assertEqual(answers[0], {"id": 20, "outputs": {"types": [0.0, 1.0], "torch": 0.0}},
                         "two element types (bool, int) and no torch imported")

    def test_exceptions_and_mismatched_answers_are_protocol_errors_and_serving_goes_on(self):
        q = [[0.5, 1.5]]
        answers, _, err, code = run(FUNCTION_SCRIPT, [
            {"id": 30, "x": [[99, 1]]},
            {"id": 31, "inputs": {"q": q, "mem": q}, "outputs": ["y", "g"]},       # one value for two outputs
            {"id": 32, "inputs": {"q": q, "mem": q, "want": [2]}, "outputs": ["y"]},  # a 2-tuple for one
            {"id": 33, "inputs": {"q": q, "mem": q, "want": [1]}, "outputs": ["z"]},  # a dict without z
            {"id": 34, "inputs": {"nope": q}, "outputs": ["y"]},
            {"id": 35, "z": 1},
            "not json",
            {"id": 36, "x": [[1.0]]},
            {"id": 37, "x": [[99, 1]]},  # 30 again
        ])
        self.assertEqual(code, 0)
        self.assertEqual([a["id"] for a in answers], [30, 31, 32, 33, 34, 35, None, 36, 37])
        # The layer's own exception is marked as the layer's ("raised"); what the answer or the call got wrong is not.
        self.assertEqual(placed(answers[0]), {"id": 30, "error": "ValueError: boom at 99", "raised": True,
                                              "type": "ValueError"})
        for k in (1, 2, 3, 4, 5, 6, 7):
            self.assertNotIn("raised", answers[k])
        self.assertIn("asks for 2 outputs (y, g)", answers[1]["error"])
        self.assertIn("tuple of 2 values", answers[2]["error"])
        self.assertIn("without the output(s) z", answers[3]["error"])
        self.assertIn("TypeError", answers[4]["error"])
        self.assertIn("unexpected keyword argument 'nope'", answers[4]["error"])
        self.assertIn('"x" (one tensor) or "inputs"', answers[5]["error"])
        self.assertIn("JSONDecodeError", answers[6]["error"])
        self.assertEqual(answers[7], {"id": 36, "y": [[2.0]]})
        # The first exception's whole traceback goes to stderr, each later one of another kind in a line, a repeat
        # not at all, then the count.
        self.assertEqual(err.count("Traceback"), 1, err)
        self.assertIn("raise ValueError(\"boom at 99\")", err)
        self.assertEqual(err.count("another exception (traceback not shown)"), 6, err)
        self.assertEqual(err.count("boom at 99"), 2, err)  # the traceback's raise line and its last line
        self.assertIn("permcheck_adapter: 8 exceptions in all, 7 different", err)

    def test_stdout_carries_only_answers_and_user_prints_go_to_stderr(self):
        script = """
            import os, sys
            from permcheck_adapter import serve

            def layer(x):
                print("printed by the layer")
                sys.stdout.write("written to sys.stdout\\n")
                os.write(1, b"written to descriptor 1\\n")
                return x

            serve(layer, batch=None)
            print("after serve: stdout again")
        """
        answers, out, err, code = run(script, [{"id": 1, "x": [[1.5]]}, {"id": 2, "x": [[2.5]]}])
        self.assertEqual(code, 0)
        self.assertEqual(out, '{"id": 1, "y": [[1.5]]}\n{"id": 2, "y": [[2.5]]}\nafter serve: stdout again\n')
        for text in ("printed by the layer", "written to sys.stdout", "written to descriptor 1"):
            self.assertEqual(err.count(text), 2, text)

    def test_end_of_input_exits_quietly(self):
        answers, out, err, code = run(FUNCTION_SCRIPT.replace('print("user output that must not reach stdout")',
                                                              "pass"), [])
        self.assertEqual((code, out, err), (0, "", ""))

    def test_a_closed_pipe_exits_quietly(self):
        proc = start("""
            from permcheck_adapter import serve
            serve(lambda x: x, batch=None)
        """)
        try:
            proc.stdin.write('{"id": 1, "x": [[1.0]]}\n')
            proc.stdin.flush()
            self.assertEqual(json.loads(proc.stdout.readline()), {"id": 1, "y": [[1.0]]})
            proc.stdout.close()  # permcheck is gone: the next answer meets a closed pipe
            proc.stdin.write("".join('{"id": %d, "x": [[1.0]]}\n' % k for k in range(2, 2000)))
            proc.stdin.close()
        except BrokenPipeError:
            pass  # the adapter left before reading everything: what this test wants
        err = proc.stderr.read()
        code = finish(proc)
        self.assertEqual(code, 0)
        self.assertNotIn("Traceback", err)
        self.assertNotIn("Exception ignored", err)

    def test_ctrl_c_exits_quietly_with_130(self):
        proc = start("""
            from permcheck_adapter import serve
            serve(lambda x: x, batch=None)
        """)
        proc.stdin.write('{"id": 1, "x": [[1.0]]}\n')
        proc.stdin.flush()
        self.assertEqual(json.loads(proc.stdout.readline())["id"], 1)  # serving, waiting for the next line
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        err = proc.stderr.read()
        code = finish(proc)
        self.assertEqual(code, 130)
        self.assertNotIn("Traceback", err)


MODULE_SCRIPT = """
    import sys
    import torch
    from permcheck_adapter import serve

    class Probe(torch.nn.Module):
        \"\"\"Checks what it receives; an AssertionError becomes an error answer, which the test rejects.\"\"\"

        def __init__(self):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.tensor(2.0))  # float32 until serve() converts it

        def forward(self, x, pad=None, edge_index=None, edge_attr=None, mem=None):
            print("printed in forward")
            assert not self.training, "eval mode"
            assert not torch.is_grad_enabled(), "no_grad"
            assert x.dtype == torch.float64 and self.scale.dtype == torch.float64, (x.dtype, self.scale.dtype)
            if pad is None and edge_index is None:
                assert x.dim() == 2, x.shape  # the one-tensor form: (n, d)
                return self.scale * x
            assert pad.dtype == torch.bool, pad.dtype
            assert edge_index.dtype == torch.int64, edge_index.dtype
            assert edge_attr.dtype == torch.float64, edge_attr.dtype
            assert edge_index.shape[0] == 2 and edge_attr.shape[0] == edge_index.shape[1]
            y = torch.where(pad[:, None], torch.zeros_like(x), self.scale * x)
            if edge_index.shape[1] > 0:
                y = y.index_add(0, edge_index[1], x[edge_index[0]])
            shapes = torch.tensor([list(x.shape), list(pad.shape) + [0], list(edge_index.shape)])
            return y, shapes  # a tuple: the request's outputs in order

    serve(Probe(), dtype=torch.float64, batch=None)
"""

MHA_SCRIPT = """
    import torch
    from permcheck_adapter import serve

    torch.manual_seed(0)

    class SelfAttention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = torch.nn.MultiheadAttention(4, 2, batch_first=True)

        def forward(self, x, pad=None):
            mask = None if pad is None else pad[None]
            return self.mha(x[None], x[None], x[None], key_padding_mask=mask, need_weights=False)[0][0]

    serve(SelfAttention())  # no dtype: the module's own, float32
"""


class ServedModule(unittest.TestCase):
    def test_one_tensor_form_gives_the_module_an_n_by_d_tensor_in_eval_mode_under_no_grad(self):
        answers, _, err, code = run(MODULE_SCRIPT, [{"id": 1, "x": [[0.5, -1], [2, 0.25], [0, 0]]}])
        self.assertEqual(code, 0, err)
        # A module offers its taps (where symmetry first breaks) in every answer.
        self.assertEqual(answers, [{"id": 1, "y": [[1.0, -2.0], [4.0, 0.5], [0.0, 0.0]], "taps_offered": True}], err)
        self.assertIn("printed in forward", err)

    def test_named_form_bool_masks_int64_indices_and_empty_dims_rebuilt_from_shapes(self):
        x = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
        answers, out, err, code = run(MODULE_SCRIPT, [
            {"id": 2, "inputs": {"x": x, "pad": [False, True, False], "edge_index": [[0, 2], [1, 1]],
                                 "edge_attr": [[0.5], [0.25]]},
             "shapes": {"x": [3, 2], "pad": [3], "edge_index": [2, 2], "edge_attr": [2, 1]},
             "outputs": ["y", "shapes"]},
            # No edges: edge_index [[], []] and edge_attr [] rebuilt as (2, 0) and (0, 1); the index kind of an
            # empty input comes from the request's kinds.
            {"id": 3, "inputs": {"x": x, "pad": [False, False, True], "edge_index": [[], []], "edge_attr": []},
             "shapes": {"x": [3, 2], "pad": [3], "edge_index": [2, 0], "edge_attr": [0, 1]},
             "kinds": {"x": "float", "pad": "mask", "edge_index": "index=nodes", "edge_attr": "float"},
             "outputs": ["y", "shapes"]},
            # No nodes at all: x [] rebuilt as (0, 2).
            {"id": 4, "inputs": {"x": [], "pad": [], "edge_index": [[], []], "edge_attr": []},
             "shapes": {"x": [0, 2], "pad": [0], "edge_index": [2, 0], "edge_attr": [0, 1]},
             "kinds": {"pad": "mask", "edge_index": "index"}, "outputs": ["y", "shapes"]},
        ])
        self.assertEqual(code, 0, err)
        self.assertNotIn("error", answers[0], answers[0])
        self.assertEqual(answers[0]["outputs"]["y"], [[2.0, 4.0], [0.0 + 1.0 + 5.0, 0.0 + 2.0 + 6.0], [10.0, 12.0]])
        self.assertEqual(answers[0]["outputs"]["shapes"], [[3, 2], [3, 0], [2, 2]])
        self.assertEqual(answers[1], {"id": 3, "outputs": {"y": [[2.0, 4.0], [6.0, 8.0], [0.0, 0.0]],
                                                           "shapes": [[3, 2], [3, 0], [2, 0]]}, "taps_offered": True}, err)
        self.assertEqual(answers[2], {"id": 4, "outputs": {"y": [], "shapes": [[0, 2], [0, 0], [2, 0]]},
                                      "taps_offered": True}, err)
        self.assertTrue(out.startswith('{"id": 2'), "stdout holds answers only")

    def test_token_position_and_keep_mask_inputs_are_int64_and_a_padding_mask_stays_bool(self):
        script = """
            import torch
            from permcheck_adapter import serve

            class Kinds(torch.nn.Module):
                def forward(self, ids, pos, keep, pad):
                    assert ids.dtype == pos.dtype == keep.dtype == torch.int64, (ids.dtype, pos.dtype, keep.dtype)
                    assert pad.dtype == torch.bool, pad.dtype
                    return {"y": (ids * 100 + pos * 10 + keep).double(), "p": pad.double()}

            serve(Kinds(), dtype=torch.float64, batch=None)
        """
        kinds = {"ids": "token", "pos": "position", "keep": "mask=keep", "pad": "mask"}
        answers, _, err, code = run(script, [
            {"id": 1, "inputs": {"ids": [3, 0], "pos": [5, 6], "keep": [1, 0], "pad": [False, True]},
             "shapes": {"ids": [2], "pos": [2], "keep": [2], "pad": [2]}, "kinds": kinds, "outputs": ["y", "p"]},
            # Empty inputs: only the kinds say what they are.
            {"id": 2, "inputs": {"ids": [], "pos": [], "keep": [], "pad": []},
             "shapes": {"ids": [0], "pos": [0], "keep": [0], "pad": [0]}, "kinds": kinds, "outputs": ["y", "p"]},
        ])
        self.assertEqual(code, 0, err)
        self.assertEqual(answers[0]["outputs"], {"y": [351.0, 60.0], "p": [0.0, 1.0]}, err)
        self.assertEqual(answers[1]["outputs"], {"y": [], "p": []}, err)

    def test_serve_kinds_argument_names_an_index_input_that_arrives_empty(self):
        script = MODULE_SCRIPT.replace("serve(Probe(), dtype=torch.float64, batch=None)",
                                       'serve(Probe(), dtype="float64", kinds={"edge_index": "index"}, batch=None)')
        answers, _, err, code = run(script, [
            {"id": 5, "inputs": {"x": [[1.0, 2.0]], "pad": [False], "edge_index": [[], []], "edge_attr": []},
             "shapes": {"x": [1, 2], "pad": [1], "edge_index": [2, 0], "edge_attr": [0, 3]}, "outputs": ["y", "s"]},
        ])
        self.assertEqual(code, 0, err)
        self.assertEqual(answers, [{"id": 5, "outputs": {"y": [[2.0, 4.0]], "s": [[1, 2], [1, 0], [2, 0]]},
                                    "taps_offered": True}], err)

    def test_a_function_served_with_a_dtype_receives_tensors(self):
        script = """
            import sys
            from permcheck_adapter import serve

            def layer(x, pad=None):
                import torch  # imported by serve(), since the dtype was given by name
                assert isinstance(x, torch.Tensor) and x.dtype == torch.float64, type(x)
                assert pad is None or pad.dtype == torch.bool, pad
                assert not torch.is_grad_enabled()
                return x.sum(0) if pad is None else x[~pad]

            assert "torch" not in sys.modules
            serve(layer, dtype="float64", batch=None)
        """
        answers, _, err, code = run(script, [
            {"id": 1, "x": [[0.5, 1], [2, 3]]},
            {"id": 2, "inputs": {"x": [[0.5, 1.5], [2.0, 3.0]], "pad": [True, False]}, "outputs": ["y"]},
        ])
        self.assertEqual(code, 0, err)
        self.assertEqual(answers, [{"id": 1, "y": [2.5, 4.0]}, {"id": 2, "outputs": {"y": [[2.0, 3.0]]}}], err)

    def test_a_torch_error_is_a_protocol_error_with_the_last_line_of_its_traceback(self):
        answers, _, err, code = run(MODULE_SCRIPT, [
            {"id": 6, "inputs": {"x": [[1.0, 2.0]], "pad": [0.5], "edge_index": [[0], [0]], "edge_attr": [[1.0]]},
             "outputs": ["y", "s"]},
            {"id": 7, "x": [[1.0]]},
        ])
        self.assertEqual(code, 0, err)
        self.assertEqual(answers[0]["id"], 6)
        self.assertTrue(answers[0]["error"].startswith("AssertionError: torch.float64"), answers[0])
        self.assertNotIn("taps_offered", answers[0])  # an error answer is only the error
        self.assertEqual(answers[1], {"id": 7, "y": [[2.0]], "taps_offered": True})

    def test_multihead_attention_answers_as_the_module_computes_in_its_own_dtype(self):
        torch.manual_seed(0)
        mha = torch.nn.MultiheadAttention(4, 2, batch_first=True).eval()
        x = [[0.5, -1.0, 2.0, 0.25], [0.0, 1.5, -0.5, 1.0], [0.5, -1.0, 2.0, 0.25]]
        pad = [False, True, False]
        with torch.no_grad():
            t = torch.tensor(x)[None]
            expected = mha(t, t, t, need_weights=False)[0][0].double().tolist()
            expected_masked = mha(t, t, t, key_padding_mask=torch.tensor(pad)[None], need_weights=False)[0][0]
        answers, _, err, code = run(MHA_SCRIPT, [
            {"id": 8, "x": x},
            {"id": 9, "inputs": {"x": x, "pad": pad}, "shapes": {"x": [3, 4], "pad": [3]}, "outputs": ["y"]},
        ])
        self.assertEqual(code, 0, err)
        for got_row, want_row in zip(answers[0]["y"], expected):
            for got, want in zip(got_row, want_row):
                self.assertAlmostEqual(got, want, delta=1e-6)
                self.assertEqual(got, float(torch.tensor(got, dtype=torch.float32)), "a float32 value")
        for got_row, want_row in zip(answers[1]["outputs"]["y"], expected_masked.double().tolist()):
            for got, want in zip(got_row, want_row):
                self.assertAlmostEqual(got, want, delta=1e-6)


ENCODER_SCRIPT = """
    import os
    import torch
    from permcheck_adapter import serve

    torch.manual_seed(0)
    batch_first = os.environ.get("BATCH_FIRST") == "1"
    layer = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=batch_first)
    serve(layer, dtype=torch.float64)
"""

MIXING_SCRIPT = """
    import torch
    from permcheck_adapter import serve

    class Mixing(torch.nn.Module):  # each item's output depends on every item stacked with it on dim 0
        def forward(self, x):
            return x + x.mean(dim=0, keepdim=True)

    serve(Mixing(), dtype=torch.float64)
"""

RAISING_SCRIPT = """
    import torch
    from permcheck_adapter import serve

    class Picky(torch.nn.Module):  # refuses an input whose first value is 99, whatever else is stacked with it
        def forward(self, x):
            if (x[..., 0, 0] == 99).any():
                raise ValueError("boom at 99")
            return 2 * x

    serve(Picky(), dtype=torch.float64)
"""


def random_items(count, n, batch_dim):
    """count random items of shape (n, 8) with a dim of size 1 inserted at batch_dim, and that shape."""
    g = torch.Generator().manual_seed(n)
    shape = [n, 8]
    shape.insert(batch_dim, 1)
    return [torch.randn(shape, generator=g, dtype=torch.float64).tolist() for _ in range(count)], shape


def named(x, shape, name="x"):
    return {"inputs": {name: x}, "shapes": {name: shape}, "outputs": ["y"]}


class BatchedFunction(unittest.TestCase):
    def test_the_first_answer_announces_batching_and_a_batch_is_answered_item_by_item(self):
        answers, _, _, code = run(FUNCTION_SCRIPT.replace("batch=None)", "batch=4)"), [
            {"id": 1, "x": [[1.0]]},
            {"id": 2, "x": [[3.0]]},
            {"id": 3, "batch": [{"x": [[0.5, 1.0]]}, {"x": [[99, 1]]}, {"x": [[2.0, 3.0]]}]},
        ])
        self.assertEqual(code, 0)
        self.assertEqual(answers[0], {"id": 1, "y": [[2.0]], "batch": 4})
        self.assertEqual(answers[1], {"id": 2, "y": [[6.0]]}, "announced once")
        self.assertEqual(placed(answers[2]), {"id": 3, "batch": [{"y": [[1.0, 2.0]]},
                                                                 {"error": "ValueError: boom at 99", "raised": True,
                                                                  "type": "ValueError"},
                                                                 {"y": [[4.0, 6.0]]}]})

    def test_batch_none_or_1_announces_nothing(self):
        for arg in ("None", "1"):
            answers, _, _, code = run(FUNCTION_SCRIPT.replace("batch=None)", "batch=%s)" % arg),
                                      [{"id": 1, "x": [[1.0]]}])
            self.assertEqual(code, 0)
            self.assertEqual(answers[0], {"id": 1, "y": [[2.0]]}, arg)


class BatchedModule(unittest.TestCase):
    def items(self, count, n, batch_dim):
        return random_items(count, n, batch_dim)

    def check_stacked_equals_one_by_one(self, batch_first):
        batch_dim = 0 if batch_first else 1
        xs, shape = self.items(5, 3, batch_dim)
        one_by_one = [dict(named(x, shape, "src"), id=k + 1) for k, x in enumerate(xs)]
        batched = {"id": 9, "batch_dims": {"src": batch_dim, "y": batch_dim},
                   "batch": [named(x, shape, "src") for x in xs]}
        env = dict(os.environ, BATCH_FIRST="1" if batch_first else "0")
        old = os.environ.copy()
        os.environ.update(env)
        try:
            answers, _, err, code = run(ENCODER_SCRIPT, one_by_one + [batched])
        finally:
            os.environ.clear()
            os.environ.update(old)
        self.assertEqual(code, 0, err)
        self.assertNotIn("answering item by item", err, "the stacked forward pass ran")
        got = [a["outputs"]["y"] for a in answers[-1]["batch"]]
        want = [a["outputs"]["y"] for a in answers[:-1]]
        self.assertEqual(torch.tensor(got).shape, torch.tensor(want).shape)
        self.assertTrue(torch.allclose(torch.tensor(got), torch.tensor(want), rtol=0, atol=1e-12),
                        "each item's answer is the one it gets alone: cases are never mixed")

    def test_a_batch_first_false_module_stacks_cases_on_dim_1(self):
        self.check_stacked_equals_one_by_one(batch_first=False)

    def test_a_batch_first_module_stacks_cases_on_dim_0(self):
        self.check_stacked_equals_one_by_one(batch_first=True)

    def test_a_module_that_mixes_its_batch_gives_answers_that_depend_on_the_other_items(self):
        xs = [[[[1.0, 2.0]]], [[[3.0, 4.0]]]]
        answers, _, err, code = run(MIXING_SCRIPT, [
            {"id": 1, "batch_dims": {"x": 0, "y": 0}, "batch": [named(x, [1, 1, 2]) for x in xs]}])
        self.assertEqual(code, 0, err)
        self.assertEqual(answers[0]["batch"][0], {"outputs": {"y": [[[3.0, 5.0]]]}}, "x + the mean of both items")

    def test_a_stacked_forward_that_raises_falls_back_to_one_call_per_item(self):
        xs = [[[[1.0, 2.0]]], [[[99.0, 4.0]]], [[[3.0, 0.5]]]]
        answers, _, err, code = run(RAISING_SCRIPT, [
            {"id": 1, "batch_dims": {"x": 0, "y": 0}, "batch": [named(x, [1, 1, 2]) for x in xs]}])
        self.assertEqual(code, 0, err)
        self.assertEqual(placed(answers[0]), {"id": 1, "batch": [{"outputs": {"y": [[[2.0, 4.0]]]}},
                                                                 {"error": "ValueError: boom at 99", "raised": True,
                                                                  "type": "ValueError"},
                                                                 {"outputs": {"y": [[[6.0, 1.0]]]}}]})
        self.assertIn("answering item by item", err)

def stacked_request(request_id, xs, shape, batch_dim, name="x"):
    """A stacked request of the items xs (nested lists of the item shape, 1 at batch_dim), as permcheck writes it."""
    stacked = torch.cat([torch.tensor(x, dtype=torch.float64) for x in xs], dim=batch_dim)
    data = base64.b64encode(struct.pack("<%dd" % stacked.numel(), *stacked.flatten().tolist())).decode("ascii")
    return {"id": request_id, "stacked": len(xs), "batch_dims": {name: batch_dim, "y": batch_dim},
            "inputs": {name: data}, "shapes": {name: list(stacked.shape)}, "kinds": {name: "float"}, "outputs": ["y"]}


def unstacked(answer, name, batch_dim):
    """The items of a stacked answer's output, each with its size-1 batch dim, as nested lists."""
    raw = base64.b64decode(answer["outputs"][name], validate=True)
    values = torch.tensor(struct.unpack("<%dd" % (len(raw) // 8), raw), dtype=torch.float64)
    stacked = values.reshape(answer["shapes"][name])
    return [t.tolist() for t in stacked.split(1, dim=batch_dim)]


class StackedModule(unittest.TestCase):
    def run_with(self, env, script, requests):
        old = os.environ.copy()
        os.environ.update(env)
        try:
            return run(script, requests)
        finally:
            os.environ.clear()
            os.environ.update(old)

    def check_equals_one_by_one(self, batch_first):
        batch_dim = 0 if batch_first else 1
        xs, shape = random_items(5, 3, batch_dim)
        one_by_one = [dict(named(x, shape, "src"), id=k + 1) for k, x in enumerate(xs)]
        answers, _, err, code = self.run_with({"BATCH_FIRST": "1" if batch_first else "0"}, ENCODER_SCRIPT,
                                              one_by_one + [stacked_request(9, xs, shape, batch_dim, "src")])
        self.assertEqual(code, 0, err)
        self.assertEqual(answers[0]["stacked"], True, "a module announces stacked batches with its batch")
        self.assertNotIn("answering item by item", err, "the stacked forward pass ran")
        stacked_shape = list(shape)
        stacked_shape[batch_dim] = 5
        self.assertEqual(answers[-1]["shapes"], {"y": stacked_shape})
        got = unstacked(answers[-1], "y", batch_dim)
        want = [a["outputs"]["y"] for a in answers[:-1]]
        self.assertTrue(torch.allclose(torch.tensor(got), torch.tensor(want), rtol=0, atol=1e-12),
                        "each item's answer is the one it gets alone: cases are never mixed")

    def test_a_batch_first_false_module_takes_its_stack_on_dim_1(self):
        self.check_equals_one_by_one(batch_first=False)

    def test_a_batch_first_module_takes_its_stack_on_dim_0(self):
        self.check_equals_one_by_one(batch_first=True)

    def test_values_travel_exactly_both_ways(self):
        xs = [[[[5e-324, -0.0]]], [[[1.0 / 3.0, 1e308]]]]
        answers, _, err, code = run(RAISING_SCRIPT, [stacked_request(1, xs, [1, 1, 2], 0)])
        self.assertEqual(code, 0, err)
        self.assertEqual(unstacked(answers[0], "y", 0), [[[[2 * 5e-324, -0.0]]], [[[2.0 / 3.0, 2e308]]]],
                         "2 x, exactly (2e308 overflows to inf)")

    def test_a_stacked_forward_that_raises_falls_back_to_one_call_per_item(self):
        xs = [[[[1.0, 2.0]]], [[[99.0, 4.0]]], [[[3.0, 0.5]]]]
        answers, _, err, code = run(RAISING_SCRIPT, [stacked_request(1, xs, [1, 1, 2], 0)])
        self.assertEqual(code, 0, err)
        self.assertEqual(placed(answers[0]), {"id": 1, "batch": [{"outputs": {"y": [[[2.0, 4.0]]]}},
                                                                 {"error": "ValueError: boom at 99", "raised": True,
                                                                  "type": "ValueError"},
                                                                 {"outputs": {"y": [[[6.0, 1.0]]]}}]})
        self.assertIn("answering item by item", err)

    def test_a_malformed_stacked_request_is_an_error_answer(self):
        bad = stacked_request(4, [[[[1.0, 2.0]]]], [1, 1, 2], 0)
        bad["inputs"]["x"] = "not base64!"
        answers, _, err, code = run(RAISING_SCRIPT, [bad])
        self.assertEqual(code, 0, err)
        self.assertEqual(answers[0]["id"], 4)
        self.assertIn("error", answers[0])

    def test_only_a_module_announces_stacked_and_never_when_told_not_to(self):
        for script, want in [(RAISING_SCRIPT, True),
                             (RAISING_SCRIPT.replace("dtype=torch.float64)", "dtype=torch.float64, stacked=False)"), None),
                             (FUNCTION_SCRIPT.replace("batch=None)", "batch=4)"), None)]:
            answers, _, err, code = run(script, [{"id": 1, "x": [[1.0]]}])
            self.assertEqual(code, 0, err)
            self.assertEqual(answers[0].get("stacked"), want, script)
            self.assertIn("batch", answers[0])


TAPS_SCRIPT = """
    import sys
    import torch
    from permcheck_adapter import serve

    class Pair(torch.nn.Module):  # a tuple output: taps name[0], name[1][0] and the int tensor name[1][1]
        def forward(self, x):
            return x * 2, (x.sum(0), torch.arange(3))

    class Shift(torch.nn.Module):  # an in-place change after it finished must not change its tap
        def forward(self, x):
            return x + 1

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.pair, self.shift = Pair(), Shift()

        def forward(self, x):
            a, _ = self.pair(x)
            b = self.shift(a)
            b += 100
            return self.shift(b)  # called twice: shift, shift#2

    serve(Net(), dtype=torch.float64, taps="--no-taps" not in sys.argv, batch=None)  # answers compared exactly
"""


class ServedModuleTaps(unittest.TestCase):
    def test_taps_in_finishing_order_tuples_flattened_copies_kept_repeated_calls_numbered(self):
        x = [[1.0, 2.0], [3.0, 4.0]]
        answers, _, err, code = run(TAPS_SCRIPT, [
            {"id": 1, "x": x},
            {"id": 2, "x": x, "taps": True},
            {"id": 3, "inputs": {"x": x}, "outputs": ["y"], "taps": True},
            {"id": 4, "x": x, "taps": False},
        ])
        self.assertEqual(code, 0, err)
        self.assertEqual(answers[0], {"id": 1, "y": [[104.0, 106.0], [108.0, 110.0]], "taps_offered": True})
        taps = answers[1]["taps"]
        self.assertEqual([t["name"] for t in taps], ["pair[0]", "pair[1][0]", "pair[1][1]", "shift", "shift#2"])
        self.assertEqual(taps[0], {"name": "pair[0]", "shape": [2, 2], "values": [[2.0, 4.0], [6.0, 8.0]]})
        self.assertEqual(taps[1]["shape"], [2])
        self.assertEqual(taps[2], {"name": "pair[1][1]", "shape": [3], "values": [0.0, 1.0, 2.0]})  # an int tap
        self.assertEqual(taps[3]["values"], [[3.0, 5.0], [7.0, 9.0]])  # before the in-place += 100
        self.assertEqual(answers[1]["y"], answers[0]["y"])
        self.assertEqual([t["name"] for t in answers[2]["taps"]], [t["name"] for t in taps])
        self.assertNotIn("taps", answers[3])

    def test_taps_false_offers_none_and_a_function_never_offers(self):
        script = TAPS_SCRIPT.replace('"--no-taps" not in sys.argv', "False")
        answers, _, err, code = run(script, [{"id": 1, "x": [[1.0]], "taps": True}])
        self.assertEqual(code, 0, err)
        self.assertEqual(answers, [{"id": 1, "y": [[104.0]]}])
        answers, _, err, code = run(FUNCTION_SCRIPT, [{"id": 1, "x": [[1.0]], "taps": True}])
        self.assertEqual(answers, [{"id": 1, "y": [[2.0]]}], err)


# ---------------------------------------------------------------------------------------------------------
# Inputs and outputs named like the protocol's keys (issue 21): the adapter dispatches on the request object's own
# top-level keys, so these names are names like any other, in plain, batched and stacked requests.

RESERVED = ("batch", "stacked", "taps", "shapes", "id")

RESERVED_FUNCTION_SCRIPT = """
    from permcheck_adapter import serve

    def doubled(v):
        return [doubled(u) for u in v] if isinstance(v, list) else 2 * v

    def layer(*args, **inputs):  # one input of any name, doubled; a dict answers every output name asked
        (x,) = args or tuple(inputs.values())
        y = doubled(x)
        return y if args else dict({"y": y}, **{name: y for name in %r})

    serve(layer, batch=4)
""" % (RESERVED,)

RESERVED_MODULE_SCRIPT = """
    import torch
    from permcheck_adapter import serve

    class Scale(torch.nn.Module):
        def forward(self, x):
            return 2 * x

    class Doubling(torch.nn.Module):  # one input of any name, doubled by its one submodule (tap "scale")
        def __init__(self):
            super().__init__()
            self.scale = Scale()

        def forward(self, *args, **inputs):
            (x,) = args or tuple(inputs.values())
            y = self.scale(x)
            return y if args else dict({"y": y}, **{name: y for name in %r})

    serve(Doubling(), dtype=torch.float64)
""" % (RESERVED,)


def doubled(v):
    return [doubled(u) for u in v] if isinstance(v, list) else 2 * v


class ReservedNames(unittest.TestCase):
    X = [[0.5, -1.0, 2.0], [0.25, 0.0, 1.5]]

    def test_a_function_serves_inputs_and_outputs_named_like_the_protocols_keys(self):
        x, x2 = self.X, [[1.0, 2.0, 3.0]]
        for name in RESERVED:
            with self.subTest(name=name):
                answers, _, err, code = run(RESERVED_FUNCTION_SCRIPT, [
                    {"id": 1, "inputs": {name: x}, "shapes": {name: [2, 3]}, "kinds": {name: "float"},
                     "outputs": ["y"]},
                    {"id": 2, "inputs": {"x": x}, "shapes": {"x": [2, 3]}, "outputs": [name]},
                    {"id": 3, "batch_dims": {name: 0, "y": 0},
                     "batch": [named([x], [1, 2, 3], name), named([x2], [1, 1, 3], name)]},
                    {"id": 4, "batch_dims": {"x": 0, name: 0}, "batch": [dict(named([x], [1, 2, 3]), outputs=[name])]},
                    {"id": 5, "x": x},
                ])
                self.assertEqual(code, 0, err)
                self.assertEqual(answers, [
                    {"id": 1, "outputs": {"y": doubled(x)}, "batch": 4},
                    {"id": 2, "outputs": {name: doubled(x)}},
                    {"id": 3, "batch": [{"outputs": {"y": [doubled(x)]}}, {"outputs": {"y": [doubled(x2)]}}]},
                    {"id": 4, "batch": [{"outputs": {name: [doubled(x)]}}]},
                    {"id": 5, "y": doubled(x)},
                ], err)

    def test_a_module_serves_them_plain_with_taps_batched_and_stacked(self):
        x = self.X
        xs = [[x], [[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]]]  # two items of shape (1, 2, 3), stacked on dim 0
        for name in RESERVED:
            with self.subTest(name=name):
                stacked_in = stacked_request(6, xs, [1, 2, 3], 0, name)  # input `name`, output y
                stacked_out = dict(stacked_request(7, xs, [1, 2, 3], 0), batch_dims={"x": 0, name: 0},
                                   outputs=[name])
                answers, _, err, code = run(RESERVED_MODULE_SCRIPT, [
                    {"id": 1, "inputs": {name: x}, "shapes": {name: [2, 3]}, "outputs": ["y"]},
                    {"id": 2, "inputs": {"x": x}, "shapes": {"x": [2, 3]}, "outputs": [name]},
                    {"id": 3, "inputs": {name: x}, "shapes": {name: [2, 3]}, "outputs": [name], "taps": True},
                    {"id": 4, "batch_dims": {name: 0, "y": 0}, "batch": [named(v, [1, 2, 3], name) for v in xs]},
                    {"id": 5, "batch_dims": {"x": 0, name: 0},
                     "batch": [dict(named(v, [1, 2, 3]), outputs=[name]) for v in xs]},
                    stacked_in,
                    stacked_out,
                    {"id": 8, "x": x},
                ])
                self.assertEqual(code, 0, err)
                self.assertNotIn("answering item by item", err, "the stacked forward passes ran")
                self.assertEqual(answers[0], {"id": 1, "outputs": {"y": doubled(x)}, "taps_offered": True,
                                              "batch": 256, "stacked": True}, err)
                self.assertEqual(answers[1], {"id": 2, "outputs": {name: doubled(x)}, "taps_offered": True}, err)
                self.assertEqual(answers[2], {"id": 3, "outputs": {name: doubled(x)}, "taps_offered": True,
                                              "taps": [{"name": "scale", "shape": [2, 3], "values": doubled(x)}]}, err)
                self.assertEqual(answers[3], {"id": 4, "batch": [{"outputs": {"y": doubled(v)}} for v in xs]}, err)
                self.assertEqual(answers[4], {"id": 5, "batch": [{"outputs": {name: doubled(v)}} for v in xs]}, err)
                self.assertEqual((answers[5]["id"], answers[5]["shapes"]), (6, {"y": [2, 2, 3]}), err)
                self.assertEqual(unstacked(answers[5], "y", 0), [doubled(v) for v in xs])
                self.assertEqual((answers[6]["id"], answers[6]["shapes"]), (7, {name: [2, 2, 3]}), err)
                self.assertEqual(unstacked(answers[6], name, 0), [doubled(v) for v in xs])
                self.assertEqual(answers[7], {"id": 8, "y": doubled(x), "taps_offered": True}, err)

    def test_a_stacked_request_to_a_function_is_an_error_answer_not_a_call_with_base64_text(self):
        request = {"id": 9, "stacked": 1, "batch_dims": {"x": 0, "y": 0}, "inputs": {"x": "AAAAAAAA4D8="},
                   "shapes": {"x": [1, 1, 1]}, "kinds": {"x": "float"}, "outputs": ["y"]}
        answers, _, err, code = run(RESERVED_FUNCTION_SCRIPT, [request, {"id": 10, "x": [[1.0]]}])
        self.assertEqual(code, 0, err)
        self.assertEqual(answers[0]["id"], 9)
        self.assertIn("torch module", answers[0]["error"])
        self.assertEqual(answers[1], {"id": 10, "y": [[2.0]], "batch": 4})


if __name__ == "__main__":
    if len(sys.argv) < 2 or not os.path.isfile(os.path.join(sys.argv[1], "permcheck_adapter.py")):
        sys.exit("usage: test_permcheck_adapter.py DIRECTORY_OF_permcheck_adapter.py [unittest arguments]")
    ADAPTER_DIR = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
