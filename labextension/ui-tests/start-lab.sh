#!/usr/bin/env bash
# Start the JupyterLab the Galata tests drive: TRAINHUB_HOME and the server root are fresh
# temporary directories (the root holds a copy of examples/), no GPU is used.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=${TRAINHUB_VENV:-${TRAINHUB_CACHE:-$HOME/.cache/trainhub}/venv/py3.11}
work=$(mktemp -d -t trainhub-ui-XXXXXX)
mkdir -p "$work/home" "$work/root"
cp -r "$root/examples" "$work/root/examples"
# Datasets by name for the dataset picker (datasets.spec.ts): the local datasets file offers
# team vision two of them (its own and one for everyone); c4-shard is team nlp's.
data="$work/data"
mkdir -p "$data/imagenet-sample/train" "$data/coco-mini" "$data/c4-shard"
printf 'cat\ndog\n' >"$data/imagenet-sample/labels.txt"
printf '0123456789' >"$data/imagenet-sample/train/a.bin"
printf '{}' >"$data/coco-mini/instances.json"
printf 'text' >"$data/c4-shard/part-0"
cat >"$work/home/datasets.yaml" <<YAML
datasets:
  imagenet-sample:
    path: $data/imagenet-sample
    description: ILSVRC2012, a sample of train and the labels
    owner: vision-data@example.org
    teams: [vision]
    content_hash: true
  coco-mini:
    path: $data/coco-mini
    description: COCO 2017 annotations, for everyone on this machine
  c4-shard:
    path: $data/c4-shard
    description: one shard of C4
    teams: [nlp]
YAML
# The registry's production alias is protected by a role nobody here holds (models.spec.ts:
# the refusal is shown with the server's sentence).
cat >"$work/home/models.yaml" <<YAML
models:
  roles:
    model-approver: [release-manager]
  protected_aliases:
    production: model-approver
YAML
export TRAINHUB_DATASET_ROOTS="$data" TRAINHUB_TEAM=vision
export TRAINHUB_HOME="$work/home" TRAINHUB_UI_ROOT="$work/root" TRAINHUB_GPUS=0
export TRAINHUB_BACKEND=local PATH="$venv/bin:$PATH"
echo "trainhub ui-tests: home $TRAINHUB_HOME, root $TRAINHUB_UI_ROOT" >&2
exec jupyter lab --config "$here/jupyter_server_test_config.py"
