from whichdevice.cli.app import main

main()
