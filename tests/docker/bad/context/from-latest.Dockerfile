FROM debian:latest
COPY kept.txt /kept.txt
