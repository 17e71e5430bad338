"""The worked examples of shared/reference/ndcg-worked-examples.md, as data for the tests."""

from dataclasses import dataclass


@dataclass(frozen=True)
class WorkedExample:
    name: str
    ranked: tuple[float, ...]
    ideal: tuple[float, ...]
    gain: str
    discount: str
    dcg: float
    idcg: float | None
    ndcg: float | None


EXAMPLES = (
    WorkedExample(
        "A", (2, 3, 1, 2), (3, 2, 2, 1), "exponential", "log2",
        9.208537949220382, 10.823465818787767, 0.8507938310514055,
    ),
    WorkedExample(
        "B", (3, 1, 2, 3, 2, 0), (3, 3, 2, 2, 1, 0), "exponential", "log2",
        13.306224081788834, 14.595390756454924, 0.9116730277265138,
    ),
    WorkedExample(
        "B-linear", (3, 1, 2, 3, 2, 0), (3, 3, 2, 2, 1, 0), "linear", "log2",
        6.696665042260721, None, None,
    ),
    WorkedExample(
        "C", (3, 2, 3, 0), (3, 3, 2, 0), "linear", "log2",
        5.7618595071429155, 5.892789260714372, 0.9777813616305049,
    ),
    WorkedExample(
        "C-second", (3, 2, 3, 0, 1), (3, 3, 2, 1, 0), "linear", "log2",
        6.148712314377457, 6.323465818787765, 0.9723642841729143,
    ),
    WorkedExample(
        "D", (2, 0, 3, 2), (3, 2, 2, 0), "linear", "rank",
        3.5, 14 / 3, 0.75,
    ),
)  # fmt: skip

# Table D row by row: rank, grade, CG, discounted gain, DCG, ideal gain, IDCG, NDCG@rank.
TABLE_D = (
    (1, 2, 2, 2 / 1, 2.0, 3, 3.0, 2 / 3),
    (2, 0, 2, 0 / 2, 2.0, 2, 4.0, 0.5),
    (3, 3, 5, 3 / 3, 3.0, 2, 14 / 3, 3 / (14 / 3)),
    (4, 2, 7, 2 / 4, 3.5, 0, 14 / 3, 0.75),
)
