"""GPU energy of the carbontracker runs logged in LOG_DIR, read with carbontracker's own parser
(carbontracker.parser.parse_all_logs: per component, average power x epoch duration, in J, before
its PUE factor).  Prints {"gpu_energy_j": J, "duration_s": s, "runs": n} for the newest log.

    python carbontracker_energy.py LOG_DIR
"""
import json
import sys

from carbontracker import parser


def main():
    logs = parser.parse_all_logs(sys.argv[1])
    if not logs:
        print(json.dumps({"error": "no carbontracker logs"}))
        return 1
    newest = max(logs, key=lambda r: r["standard_filename"])
    gpu = newest["components"].get("gpu")
    if gpu is None:
        print(json.dumps({"error": "no gpu component in the log"}))
        return 1
    energy = float(sum(float(x) for row in gpu["avg_energy_usages (J)"] for x in row))
    duration = float(sum(float(x) for x in gpu["epoch_durations (s)"]))
    print(json.dumps({"gpu_energy_j": energy, "duration_s": duration, "runs": len(logs)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
