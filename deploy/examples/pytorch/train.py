#!/usr/bin/env python3
"""A small data-parallel training run for a PyTorch TrainingTask (taskType: PyTorch).

Valley runs this under torchrun on every worker; torchrun's rendezvous gives each process its
RANK, WORLD_SIZE and the process group's address. The script keeps Valley's checkpoint contract:

- it resumes from the latest checkpoint at whatever world size it now has (data-parallel replicas
  are identical, so a checkpoint is the model, the optimizer and the step, not a shard);
- it checkpoints every --checkpoint-every steps and when it receives SIGTERM (a spot notice, a
  shrink, torchrun restarting its processes at a new size), then exits;
- after each checkpoint it writes latest.json ({"step", "time", "epoch", "worldSize", "object"})
  beside it, which Valley reads for the task's status;
- at the end it writes the model to $VALLEY_OUTPUT_DIR, which Valley uploads as the task's output.

Checkpoints go to $VALLEY_CHECKPOINT_DIR (a pvc:// checkpoint) or, for an s3:// one, to S3 with
boto3 (credentials and endpoint from the AWS_* variables of the checkpoint's Secret).

The model learns y = X w* + noise (a linear regression over synthetic data drawn from a fixed
seed): small enough for CPUs and the gloo backend, with a loss that visibly falls.
"""
import argparse
import datetime
import io
import json
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

FEATURES = 32
stop_requested = False


def on_sigterm(signum, frame):
    global stop_requested
    stop_requested = True


class Store:
    """Where checkpoints live: a directory (pvc://, or a local path for a try-out) or S3."""

    def __init__(self):
        self.dir = os.environ.get("VALLEY_CHECKPOINT_DIR") or os.environ.get("CHECKPOINT_DIR")
        uri = os.environ.get("VALLEY_CHECKPOINT_URI", "")
        self.s3 = None
        if not self.dir and uri.startswith("s3://"):
            import boto3  # only an s3:// checkpoint needs it

            bucket, _, prefix = uri[len("s3://"):].partition("/")
            self.bucket, self.prefix = bucket, prefix.rstrip("/") + "/" if prefix else ""
            endpoint = os.environ.get("AWS_ENDPOINT_URL") or os.environ.get("AWS_ENDPOINT_URL_S3")
            self.s3 = boto3.client("s3", endpoint_url=endpoint)
        elif self.dir:
            os.makedirs(self.dir, exist_ok=True)

    def enabled(self):
        return bool(self.dir) or self.s3 is not None

    def get(self, name):
        try:
            if self.s3 is not None:
                return self.s3.get_object(Bucket=self.bucket, Key=self.prefix + name)["Body"].read()
            with open(os.path.join(self.dir, name), "rb") as f:
                return f.read()
        except Exception:  # absent (a first run) or unreadable: start from scratch
            return None

    def put(self, name, data):
        if self.s3 is not None:
            self.s3.put_object(Bucket=self.bucket, Key=self.prefix + name, Body=data)
            return
        tmp = os.path.join(self.dir, f".{name}.{os.getpid()}")
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, os.path.join(self.dir, name))  # readers see a whole file or the old one


def save(store, model, optimizer, step):
    """The checkpoint, then latest.json naming it (so latest.json only names complete ones)."""
    if not store.enabled():
        return
    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}, buf)
    name = f"ckpt-{step:08d}.pt"
    store.put(name, buf.getvalue())
    record = {
        "step": step,
        "time": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "epoch": int(os.environ.get("VALLEY_EPOCH", "0")),
        "worldSize": dist.get_world_size(),
        "object": name,
    }
    store.put("latest.json", json.dumps(record).encode())
    print(f"rank {dist.get_rank()}: checkpoint at step {step} ({name})", flush=True)


def load(store, model, optimizer):
    latest = store.get("latest.json") if store.enabled() else None
    if not latest:
        return 0
    name = json.loads(latest)["object"]
    data = store.get(name)
    if data is None:
        return 0
    state = torch.load(io.BytesIO(data))
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return int(state["step"])


def batch(step, rank, world, size):
    """This rank's share of step's batch: the same data whatever the world size."""
    g = torch.Generator().manual_seed(step)
    x = torch.randn(size, FEATURES, generator=g)
    w = torch.arange(1, FEATURES + 1, dtype=torch.float32) / FEATURES
    y = x @ w + 0.01 * torch.randn(size, generator=g)
    return x.chunk(world)[rank], y.chunk(world)[rank]  # size >= world: every rank has rows


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--checkpoint-every", type=int, default=100)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--lr", type=float, default=0.002, help="small: the loss falls over a thousand steps or so")
    p.add_argument("--step-seconds", type=float, default=0.0, help="sleep per step (to make a run last)")
    args = p.parse_args()
    if args.batch < int(os.environ.get("WORLD_SIZE", "1")):
        sys.exit("--batch must be at least the world size")

    signal.signal(signal.SIGTERM, on_sigterm)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = torch.nn.Linear(FEATURES, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    store = Store()
    step = load(store, model, optimizer)
    ddp = DistributedDataParallel(model)  # broadcasts rank 0's parameters: every replica equal
    print(f"rank {rank}/{world}: starting at step {step} (restart {os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}, "
          f"epoch {os.environ.get('VALLEY_EPOCH', '?')})", flush=True)

    while step < args.steps:
        x, y = batch(step, rank, world, args.batch)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(x).squeeze(1), y)
        loss.backward()  # averages the gradients over the world
        optimizer.step()
        step += 1
        if rank == 0 and step % 50 == 0:
            print(f"step {step} loss {loss.item():.6f} world {world}", flush=True)
        if stop_requested:
            # Any rank may save: the replicas are equal. A rank torchrun or Valley stops saves and
            # goes; the others resume from it at the next rendezvous.
            save(store, model, optimizer, step)
            print(f"rank {rank}: SIGTERM at step {step}: checkpointed, exiting", flush=True)
            sys.exit(143)  # the contract's: stopped by a signal, not finished
        if rank == 0 and step % args.checkpoint_every == 0:
            save(store, model, optimizer, step)
        if args.step_seconds > 0:
            time.sleep(args.step_seconds)

    if rank == 0:
        save(store, model, optimizer, step)
        out = os.environ.get("VALLEY_OUTPUT_DIR")
        if out:
            os.makedirs(out, exist_ok=True)
            torch.save(model.state_dict(), os.path.join(out, "model.pt"))
            with open(os.path.join(out, "final.json"), "w") as f:
                json.dump({"step": step, "loss": loss.item(), "worldSize": world}, f)
        print(f"done at step {step}, loss {loss.item():.6f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
