from kgqa.cli import main
import sys
sys.exit(main())
