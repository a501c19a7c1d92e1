#!/bin/bash
# Open MPI: one process per GPU on the hosts in hosts.txt ("node1 slots=8" per line). MPI does
# not say which host runs rank 0, so MASTER_ADDR is passed explicitly; -x exports each variable.
set -euo pipefail
export FLOCKML_TOKEN=$(openssl rand -hex 24) MASTER_ADDR=$(head -1 hosts.txt | cut -d' ' -f1) MASTER_PORT=29500
mpirun -np 16 --hostfile hosts.txt --bind-to none --map-by slot \
  -x FLOCKML_TOKEN -x MASTER_ADDR -x MASTER_PORT -x NCCL_SOCKET_IFNAME=eth0 -x PATH \
  node dist/train.js --ckpt /shared/ckpt
