FROM debian:12
COPY no-such-dir /x/
