# %% [markdown]
# # A user pack at work
#
# EGG's agents read *principles*: short pieces of expert advice that come from packs. This script
# loads the built-in packs with and without `my-house-rules/` (a small pack in this directory) and
# shows how the principles an agent would receive change:
#
# * a new house rule appears (it is specific to reductions, so it ranks first);
# * `memory/eviction-hints` is *overridden*: same id, the house text replaces the built-in one;
# * the report records which pack versions were used.
#
# Run it with `python examples/custom_principles/show_pack_effect.py`. The same pack works on the
# command line: `egg principles list --principles examples/custom_principles/my-house-rules`.

# %%
from pathlib import Path

from principles import load_packs, rank, render_principles, retrieve

HERE = Path(__file__).resolve().parent
PACK = HERE / "my-house-rules"

# The agent: hardware-tuning stage, memory focus. The problem: a memory-bound row reduction.
TASK = dict(stage="hardware_tuning", focus="memory", op_classes=["reduction"], bottleneck="memory",
            target="sm_90")
BUDGET = 700  # tokens for the principles section of the prompt

# %% Built-ins only
builtin_packs = load_packs()
before = retrieve(builtin_packs, token_budget=BUDGET, **TASK)
print("Built-in packs only:")
for principle in before:
    print(f"  {principle.id}")

# %% Built-ins + the user pack (what `--principles examples/custom_principles/my-house-rules` does)
user_packs = load_packs([PACK])
after = retrieve(user_packs, token_budget=BUDGET, **TASK)
print("\nWith my-house-rules:")
for principle in after:
    owner = user_packs.owner(principle.id).name
    print(f"  {principle.id}  (from {owner})")

# %% What changed
before_ids = {p.id: p for p in before}
after_ids = {p.id: p for p in after}
print("\nAdded:     ", sorted(set(after_ids) - set(before_ids)))
print("Dropped:   ", sorted(set(before_ids) - set(after_ids)), "(pushed out of the token budget)")
print("Rewritten: ", sorted(i for i in set(before_ids) & set(after_ids) if before_ids[i].text != after_ids[i].text))

# %% The overridden principle, before and after
print("\nmemory/eviction-hints, built-in:\n ", builtin_packs.find("memory/eviction-hints").text[:160], "...")
print("memory/eviction-hints, with the pack:\n ", user_packs.find("memory/eviction-hints").text[:160], "...")

# %% Scores, for the curious: op-class specificity + bottleneck match + target match
print("\nRanking with the pack (score, tokens, id):")
for ranked in rank(user_packs, **TASK)[:6]:
    print(f"  {ranked.score:5.2f} {ranked.tokens:4d}  {ranked.principle.id}")

# %% The principles section of the prompt (the full prompt: `egg prompt PROBLEM --stage ... --focus ...`)
print("\n" + render_principles(after))

# %% What a run report records
print()
for version in user_packs.versions():
    print(f"  {version.name} {version.version} ({version.origin}) overrides={version.overrides}")
