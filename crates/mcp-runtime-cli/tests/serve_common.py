"""What the Python clients of the serve tests share."""
import json

import anyio


def logged(path, method):
    """How many messages of `method` the server logged; a line still being written
    is not counted yet."""
    count = 0
    try:
        with open(path) as f:
            for line in f:
                try:
                    count += json.loads(line).get("method") == method
                except json.JSONDecodeError:
                    pass
    except FileNotFoundError:
        pass
    return count


async def wait_until(check, what):
    """`what`, once `check()` holds (within 20 s)."""
    with anyio.fail_after(20, shield=False):
        while not check():
            await anyio.sleep(0.02)
    return what
