"""Keep GPU 0 busy with bf16 matrix products for N seconds (the load the agent must see)."""

import sys
import time

import torch

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
end = time.monotonic() + seconds
while time.monotonic() < end:
    for _ in range(50):
        a @ a
    torch.cuda.synchronize()
