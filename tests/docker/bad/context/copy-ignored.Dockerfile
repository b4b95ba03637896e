FROM debian:12
COPY kept.txt ignored.txt /x/
