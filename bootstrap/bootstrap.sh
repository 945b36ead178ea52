# overbrainer pod bootstrap (POSIX sh functions). The pod's command defines
# these, then write_watchdog, then calls bootstrap_main.

# bootstrap_main: prepares the run directory, writes the watchdog and hands the
# container over to it.
bootstrap_main() {
  RUN_DIR=${OVERBRAINER_RUN_DIR:?OVERBRAINER_RUN_DIR is not set}
  WATCHDOG=$RUN_DIR/.pod/watchdog.sh
  mkdir -p "$RUN_DIR/.pod" || exit 1
  write_watchdog "$WATCHDOG" || exit 1
  exec sh "$WATCHDOG"
}
