"""Writes a deliberately wrong copy of a meshsim plan, for tests that a run catches it.

corrupt_plan.py IN OUT offset   one payload region gets a 2-byte destination offset
corrupt_plan.py IN OUT double   one sum region adds another part instead of its own
"""
import json
import sys

src, dst, how = sys.argv[1:4]
plan = json.load(open(src))
done = False
for task in plan["tasks"]:
    for region in task.get("payload", []):
        if how == "offset" and not done:
            region["dst_offset"] = "2B"
            done = True
        if how == "double" and not done and region.get("reduce") and region["src_buffer"].endswith("/part1"):
            region["src_buffer"] = region["src_buffer"][: -len("part1")] + "part0"
            done = True
if not done:
    sys.exit(f"{src}: nothing to corrupt by {how}")
json.dump(plan, open(dst, "w"))
