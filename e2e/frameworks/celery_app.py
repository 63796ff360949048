"""The Celery app of the Celery check. The broker and the result backend come from the
environment (CELERY_CHECK_BROKER, CELERY_CHECK_BACKEND), so the worker process that
`celery -A celery_app worker` starts uses the same ones as the caller."""

import os

from celery import Celery

app = Celery(
    "memoria_check",
    broker=os.environ["CELERY_CHECK_BROKER"],
    backend=os.environ["CELERY_CHECK_BACKEND"],
)
app.conf.update(
    task_serializer="json",
    result_serializer="json",
    accept_content=["json"],
    task_default_queue="memoria-check",
    broker_connection_retry_on_startup=True,
    result_expires=3600,
    worker_hijack_root_logger=False,
)


@app.task
def add(a, b):
    return a + b


@app.task
def shout(text):
    return {"text": text.upper(), "length": len(text)}


@app.task
def fail(message):
    raise ValueError(message)
