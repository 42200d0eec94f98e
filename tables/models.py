"""The dataset store's rows (tables.store): one per stacked dataset of the HTTP deployment.

A row never holds a token or a server path: who asked is the one-way token hash
(eco_core.redact.token_hash), and the folder is found from the store directory and the id. The
plan holds the signed file URLs the listing gave (they carry no token), so the worker fetches
without one."""

from __future__ import annotations

from django.db import models

BUILDING, READY, FAILED = "building", "ready", "failed"
STATES = (BUILDING, READY, FAILED)


class Dataset(models.Model):
    # Product, package, months and a digest of the rest of the selection and of every source's
    # MD5: the same selection of the same files names the same dataset, whoever asks.
    dataset_id = models.CharField(max_length=200, unique=True)
    product = models.CharField(max_length=32)
    selection = models.JSONField()
    state = models.CharField(max_length=16, choices=[(s, s) for s in STATES], default=BUILDING)
    progress = models.JSONField(default=dict, blank=True)
    error = models.JSONField(null=True, blank=True)
    planned_bytes = models.BigIntegerField(default=0)
    size_bytes = models.BigIntegerField(default=0)
    plan = models.JSONField(default=dict, blank=True)
    attempts = models.PositiveIntegerField(default=1)
    requested_by = models.CharField(max_length=32, help_text="One-way hash of the token that asked first.")
    created_at = models.DateTimeField(auto_now_add=True)
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField()
    # The build's lease (tables.store): who runs it and until when, renewed by its heartbeat. One
    # owner at a time (taken by a conditional UPDATE); a build is dead only once this has passed.
    lease_owner = models.CharField(max_length=100, blank=True, default="")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # A queued build no worker took is queued again (tables.store.sweep): when, and how often.
    requeued_at = models.DateTimeField(null=True, blank=True)
    requeues = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-last_used_at"]
        indexes = [models.Index(fields=["state", "last_used_at"])]

    def __str__(self) -> str:
        return self.dataset_id
