"""What an unreachable catalog database looks like, said once for every layer that must tell an
outage from a bug: a connection refused, lost or timed out (Django's OperationalError) or one
closed under us (InterfaceError). Any other DatabaseError (a bad query, a missing table) is a bug
and is not hidden behind it.

Imports nothing but django.db, so it is safe before Django's apps are loaded (the stdio server
imports the gateway's call path first)."""

from __future__ import annotations

from django.db import InterfaceError, OperationalError

DATABASE_DOWN: tuple[type[Exception], ...] = (OperationalError, InterfaceError)
