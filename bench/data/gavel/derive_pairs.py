#!/usr/bin/env python3
"""Writes pairs.csv from Gavel's measured throughputs (scheduler/simulation_throughputs.json).

For each pair of the Pollux applications the simulator replays, the Gavel job type standing for it
(APPS below), on one V100 (scale factor 1): each one's throughput beside the other, divided by its
throughput alone. Usage: derive_pairs.py PATH/TO/simulation_throughputs.json > pairs.csv
"""
import json
import sys

# Pollux application -> the Gavel job type of the same model family at the nearest per-GPU batch
# size (Pollux's local batch sizes: cifar10 32, imagenet 20, bert 4, deepspeech2 10, ncf 32,
# yolov3 4). Gavel has no detector: yolov3 stands as CycleGAN, its other convolutional image model.
APPS = {
    "bert": "Transformer (batch size 16)",
    "cifar10": "ResNet-18 (batch size 32)",
    "deepspeech2": "LM (batch size 10)",
    "imagenet": "ResNet-50 (batch size 16)",
    "ncf": "Recommendation (batch size 512)",
    "yolov3": "CycleGAN",
}


def main():
    v100 = json.load(open(sys.argv[1]))["v100"]
    key = lambda job: f"('{job}', 1)"
    print("profile,other,rate,other_rate")
    names = sorted(APPS)
    for i, a in enumerate(names):
        for b in names[i:]:
            row = v100[key(APPS[a])]
            together = row[key(APPS[b])]
            alone_a, alone_b = row["null"], v100[key(APPS[b])]["null"]
            print(f"{a},{b},{together[0] / alone_a:.3f},{together[1] / alone_b:.3f}")


if __name__ == "__main__":
    main()
