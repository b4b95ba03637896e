FROM debian:12 AS build
RUN echo > /out
FROM debian:12-slim
COPY --from=biuld /out /out
