"""moto's S3 server (requirements-dev.txt: moto[server]) on 127.0.0.1, checking SigV4 signatures
after its first `unauthenticated` calls, as a real bucket does."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

SETUP_KEYS = {"aws_access_key_id": "setup", "aws_secret_access_key": "setup", "region_name": "us-east-1"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def s3_endpoint(log_dir: Path, unauthenticated: int) -> Iterator[str]:
    """Yields the endpoint URL; the first `unauthenticated` calls (the test's set-up) need no valid
    signature, every later one does."""
    pytest.importorskip("moto.server", reason="moto[server] (requirements-dev.txt) is not installed")
    port = _free_port()
    log_path = log_dir / "moto.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            env={**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": str(unauthenticated)}, stdout=log,
            stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        pytest.fail("moto server did not start:\n" + log_path.read_text())
                    time.sleep(0.2)
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def reader_key(endpoint: str) -> tuple[str, str]:
    """An IAM user allowed only s3:GetObject, and its key (three set-up calls)."""
    import boto3

    iam = boto3.client("iam", endpoint_url=endpoint, **SETUP_KEYS)
    iam.create_user(UserName="reader")
    key = iam.create_access_key(UserName="reader")["AccessKey"]
    iam.put_user_policy(UserName="reader", PolicyName="read", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}]}))
    return key["AccessKeyId"], key["SecretAccessKey"]
