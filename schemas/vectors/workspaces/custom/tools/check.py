def check(term: str) -> bool:
    """True when the term is defined."""
    return bool(term)
