#!/usr/bin/env bash
# Recorded device run (session 22, issue 22): the call the targets name, on the H200, through
# tools/h200/session12_run.sh (carry .gpucarry, prepared as that script says): main's full table
# (ffhq1024-f at batch 1 and 32 in auto, fp16, tf32 and fp32; paper256 at batch 1 and 128 in auto and fp16; with
# --batch-invariance on and off), the official code (tools/bench_official.py) for both configurations in the same
# call, and the per-step profiles of auto and tf32 at batch 32. On another card it says so and stops (the targets
# are the H200's; other cards' figures come from session12_run.sh's own calls).
#   bash tools/h200/targets_run.sh
set -u
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $gpu"
if [[ "$gpu" != *H200* && -z "${ANY_GPU:-}" ]]; then
  echo "not an H200: the targets are the H200's (ANY_GPU=1 runs the table anyway)"
  exit 3
fi
export NO_BASE=1 PHASES=build,bench,official,profile ROUNDS=1 \
  BENCH='--config ffhq1024-f --batch 1 --precision auto,fp16 --iters 30;--config paper256 --batch 1 --precision auto,fp16 --iters 30' \
  BENCH_NEW='--config ffhq1024-f --batch 32 --precision auto,fp16,tf32,fp32 --batch-invariance on,off --iters 10;--config ffhq1024-f --batch 1 --precision auto,fp16,tf32,fp32 --batch-invariance off --iters 20;--config paper256 --batch 128 --precision auto,fp16 --batch-invariance on,off --iters 10;--config paper256 --batch 1 --precision auto,fp16 --batch-invariance off --iters 20' \
  OFFICIAL_ARGS='--configs ffhq1024-f --batches 1,32 --modes auto,fp16 --iters 10;--configs paper256 --batches 1,128 --modes auto,fp16 --iters 10' \
  PROFILES='auto:32 tf32:32'
exec bash "$(dirname "$0")/session12_run.sh"
