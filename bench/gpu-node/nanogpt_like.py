# A bf16 MLP stack trained on random data, printing nanoGPT's log lines (iter N: loss ...),
# an eval line and 1.5 s of idle GPU (a checkpoint) every 200 iterations:
#   python3 nanogpt_like.py [ITERS]
import sys, time
import torch
torch.manual_seed(0)
dev = "cuda"
d, layers, batch = 4096, 8, 8192
model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(d, d), torch.nn.GELU()) for _ in range(layers)]).to(dev, torch.bfloat16)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randn(batch, d, device=dev, dtype=torch.bfloat16)
iters = int(sys.argv[1]) if len(sys.argv) > 1 else 200
t0 = time.time()
for it in range(iters + 1):
    if it % 200 == 0 and it > 0:
        with torch.no_grad():
            v = model(x).float().pow(2).mean().item()
        print(f"step {it}: train loss {v:.4f}, val loss {v*1.01:.4f}", flush=True)
        time.sleep(1.5)  # a checkpoint: the GPU idles
        t0 = time.time()
    loss = model(x).float().pow(2).mean()
    loss.backward(); opt.step(); opt.zero_grad(set_to_none=True)
    lossf = loss.item()
    t1 = time.time(); dt = t1 - t0; t0 = t1
    flops = 6 * d * d * layers * batch
    print(f"iter {it}: loss {lossf:.4f}, time {dt*1000:.2f}ms, mfu {flops/dt/989e12*100:.2f}%", flush=True)
