from growcockpit.cli import main

raise SystemExit(main())
