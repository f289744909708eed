"""Reading the CSV cells that meshsim's plotting scripts draw."""
import math


def number(text):
    """The value of a numeric cell, or None when it is empty or not a finite number."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None
