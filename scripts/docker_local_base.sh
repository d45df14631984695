#!/usr/bin/env bash
# Build a local base image for the Dockerfile where Docker Hub cannot be reached: Debian
# bookworm (Python 3.11) from deb.debian.org by debootstrap, tagged lithos-base:bookworm.
# The host's CA bundle is copied in and pip pointed at it, for networks that inspect TLS.
# Needs root, debootstrap and Docker; then: BASE=lithos-base:bookworm scripts/docker_smoke.sh
set -euo pipefail
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    bookworm "$root" http://deb.debian.org/debian
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
tar -C "$root" -c . | docker import --change 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
    - lithos-base:bookworm
