"""Provisioning: idempotent steps that install and tune what a testbed node needs."""
