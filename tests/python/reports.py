"""The seed's report line, computed independently of gpumem for the assertions."""


def line(used: int, peaked: int, suffix: str = "") -> str:
    return f"△Used Peaked MB: {used:6,.0f} {peaked:6,.0f}{suffix}"
