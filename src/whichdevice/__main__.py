from whichdevice.cli import main

main()
