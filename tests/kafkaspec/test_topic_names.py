import pytest

from kafkaspec.topic_names import InvalidTopicNameError, unify_collision_chars, validate_topic_name


@pytest.mark.parametrize("name", ["a", "orders", "Orders.v2", "snake_case-and.dots", "x" * 249, "__consumer_offsets"])
def test_legal_names(name):
    validate_topic_name(name)


@pytest.mark.parametrize(("name", "reason"), [
    ("", "empty"),
    (".", "cannot be"),
    ("..", "cannot be"),
    ("x" * 250, "longer than 249"),
    ("has space", "character other than"),
    ("slash/name", "character other than"),
    ("ümlaut", "character other than"),
    ("colon:name", "character other than"),
])
def test_illegal_names(name, reason):
    with pytest.raises(InvalidTopicNameError, match=reason):
        validate_topic_name(name)


def test_dot_and_underscore_collide():
    assert unify_collision_chars("a.b_c") == unify_collision_chars("a_b.c")
    assert unify_collision_chars("a.b") != unify_collision_chars("a-b")
