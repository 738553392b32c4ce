"""The layer of bench/batched_audit: PyTorch's TransformerEncoderLayer (d_model 8, 2 heads, batch_first, no
dropout) served by permcheck_adapter.serve, for `permcheck audit --input src:1,n,8 --output y:1,n,8`.

PERMCHECK_BATCH (default 256) is serve()'s batch: 1 serves one case per request (the unbatched protocol).
PERMCHECK_FEEDFORWARD (default 2048, PyTorch's default) is the width of its feed-forward block.
PERMCHECK_TIMES_FILE, when set, receives at exit the seconds from the first answer to the last (the audit's own
work: start-up and exit excluded) and the CPU seconds this process spent in them.
"""
import os
import sys
import time

import torch
from permcheck_adapter import serve


class Stamped:
    """The answer stream, noting when the first answer is written."""

    def __init__(self, stream, path):
        self.stream, self.path = stream, path

    first = last = first_cpu = None

    def write(self, text):
        self.stream.write(text)
        self.last = time.time()
        if self.first is None:
            self.first, self.first_cpu = self.last, time.process_time()

    def record(self):
        """Writes, when asked to, the seconds from the first answer to the last and the CPU seconds of this
        process between them (its start-up and exit excluded)."""
        if self.path and self.first is not None:
            with open(self.path, "w") as f:
                f.write("%.6f %.6f\n" % (self.last - self.first, time.process_time() - self.first_cpu))

    def flush(self):
        self.stream.flush()


torch.manual_seed(0)
feedforward = int(os.environ.get("PERMCHECK_FEEDFORWARD", "2048"))  # PyTorch's default width
layer = torch.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=feedforward, batch_first=True, dropout=0.0)
answers = Stamped(sys.stdout, os.environ.get("PERMCHECK_TIMES_FILE"))
serve(layer, batch=int(os.environ.get("PERMCHECK_BATCH", "256")), stacked=os.environ.get("PERMCHECK_STACKED", "1") == "1",
      stdout=answers)
answers.record()
