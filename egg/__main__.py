from egg.cli.main import main

raise SystemExit(main())
