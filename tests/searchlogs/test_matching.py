from searchlogs.matching import normalised, query_keys


def test_case_spacing_and_compatibility_forms_do_not_matter():
    assert normalised("  Tent\t Pegs \n") == "tent pegs"
    assert normalised("TENT") == normalised("tent")
    assert normalised("\uff34\uff45\uff4e\uff54") == "tent"  # full-width letters
    assert normalised("STRASSE") == normalised("straße")  # casefold, not lower()


def test_other_spellings_stay_apart():
    assert normalised("tents") != normalised("tent")
    assert normalised("tént") != normalised("tent")


def test_the_lowest_query_id_wins_when_two_queries_normalise_alike():
    assert query_keys([(9, "Tent"), (4, "tent "), (5, "stove")]) == {"tent": 4, "stove": 5}
