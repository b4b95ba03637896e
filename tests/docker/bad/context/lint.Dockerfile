FROM debian:12 as build
COPY kept.txt /kept.txt
