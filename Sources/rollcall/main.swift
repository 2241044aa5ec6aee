unblockStopSignals()
RollcallCommand.main()
