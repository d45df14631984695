"""Pure rules of living memory: stable clusters of the coactivation graph, matching a
cluster to the concept it already is, concept titles and damping."""

from __future__ import annotations

from lithos.domain.memory import (
    CoactivationPair,
    Concept,
    ConceptRules,
    WorkingItem,
    cluster_key,
    concept_body,
    concept_title,
    detect_clusters,
    matching_concept,
    recurring_pairs,
    repeat_penalty,
)

RULES = ConceptRules(min_size=3, max_size=5, min_coactivation=3, min_density=0.6)
SPACES = {n: "default" for n in "abcdefgh"}


def pairs(*items: tuple[str, str, int]) -> list[CoactivationPair]:
    return [CoactivationPair(a, b, n) for a, b, n in items]


def test_a_triangle_cited_together_often_is_a_cluster():
    [cluster] = detect_clusters(pairs(("a", "b", 3), ("b", "c", 4), ("a", "c", 5)), SPACES, RULES)
    assert cluster.members == ("a", "b", "c") and cluster.strength == 4.0
    assert cluster.key == cluster_key(["c", "b", "a"])


def test_weak_pairs_small_groups_and_loose_chains_are_not_clusters():
    weak = pairs(("a", "b", 2), ("b", "c", 2), ("a", "c", 2))
    assert detect_clusters(weak, SPACES, RULES) == []
    pair = pairs(("a", "b", 9))
    assert detect_clusters(pair, SPACES, RULES) == []
    chain = pairs(("a", "b", 3), ("b", "c", 3), ("c", "d", 3), ("d", "e", 3))
    assert detect_clusters(chain, SPACES, RULES) == []  # 4 of 10 pairs: too loose


def test_a_cluster_never_crosses_namespaces():
    spaces = {**SPACES, "c": "other"}
    triangle = pairs(("a", "b", 3), ("b", "c", 3), ("a", "c", 3))
    assert detect_clusters(triangle, spaces, RULES) == []


def test_clusters_are_the_same_whatever_the_order_of_pairs():
    items = pairs(("a", "b", 3), ("b", "c", 3), ("a", "c", 3), ("e", "f", 4), ("f", "g", 4))
    items += pairs(("e", "g", 4))
    assert detect_clusters(items, SPACES, RULES) == detect_clusters(items[::-1], SPACES, RULES)
    assert [c.members for c in detect_clusters(items, SPACES, RULES)] == [
        ("a", "b", "c"),
        ("e", "f", "g"),
    ]


def test_a_grown_cluster_is_the_concept_it_overlaps():
    concept = Concept("c1", cluster_key("abc"), "default", ("a", "b", "c"))
    items = pairs(*((x, y, 3) for x, y in [("a", "b"), ("a", "c"), ("b", "c"), ("a", "d")]))
    items += pairs(("b", "d", 3), ("c", "d", 3))
    [grown] = detect_clusters(items, SPACES, RULES)
    assert grown.members == ("a", "b", "c", "d")
    assert matching_concept(grown, [concept], RULES) == concept
    elsewhere = Concept("c2", "k", "default", ("x", "y", "z"))
    assert matching_concept(grown, [elsewhere], RULES) is None


def test_concept_titles_are_readable_and_deterministic():
    titles = ["Exponential backoff", "Backoff with jitter", "Retry budget and backoff"]
    title = concept_title(titles, "abcdef123456")
    assert title == concept_title(list(reversed(titles)), "abcdef123456")
    assert title.startswith("Concept - backoff") and title.endswith("(abcdef)")
    body = concept_body([("ops/Exponential backoff.md", "Exponential backoff")], 3.5)
    assert "- [[ops/Exponential backoff|Exponential backoff]]" in body


def test_repeated_retrieval_penalty_grows_to_a_cap():
    rules = ConceptRules(repeat_penalty=0.05, max_repeat_penalty=0.4)
    assert [repeat_penalty(n, rules) for n in (0, 1, 4)] == [0.0, 0.05, 0.2]
    assert repeat_penalty(100, rules) == 0.4


def test_recurring_pairs_name_each_pair_once_in_id_order():
    items = [WorkingItem("b", 3), WorkingItem("a", 2), WorkingItem("c", 2)]
    assert recurring_pairs(items) == [("a", "b"), ("a", "c"), ("b", "c")]
