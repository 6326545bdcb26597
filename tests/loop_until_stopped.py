"""A training loop for the tests of long jobs (attach, detach, a collector killed): it trains until a file ``stop``
appears beside it, printing every tenth step (a test that waits for its output, or for it to go on printing, waits
tens of steps, not hundreds: a sampled step takes tens of milliseconds on a busy machine), then exits with the status
written in that file."""

LOOP = """
import pathlib, sys, torch
here = pathlib.Path(__file__).parent
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
step = 0
while not (here / "stop").exists():
    opt.zero_grad(); model(torch.randn(8, 16)).sum().backward(); opt.step(); step += 1
    if step % 10 == 0:
        print("step", step, flush=True)
print("done at step", step)
sys.exit(int((here / "stop").read_text() or 0))
"""
