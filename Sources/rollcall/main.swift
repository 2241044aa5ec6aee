RollcallCommand.main()
