from vllm_sp_base._main import main

raise SystemExit(main())
