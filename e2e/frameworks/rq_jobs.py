"""The functions the RQ check enqueues; `rq worker` imports them from this directory."""


def add(a, b):
    return a + b


def fail(message):
    raise ValueError(message)


def describe(payload):
    # A result that is not a number: RQ pickles it into the job's hash.
    return {"keys": sorted(payload), "total": sum(payload.values())}
